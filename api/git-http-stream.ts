/**
 * Runs one smart-HTTP git service for one request, streaming both ways: the request body
 * (gunzipped when sent so) goes to git's stdin, git's stdout to the response, with
 * backpressure and never a whole pack in memory. Bad input ends in a 4xx with the
 * contract's error body while nothing was sent yet; a client that goes away, a body over
 * the limit, or a transfer that stalls kills git. No shell; every argument is ours.
 */
import type { ChildProcess } from 'node:child_process';
import type { Request, Response } from 'express';
import { Transform, type TransformCallback } from 'node:stream';
import { createGunzip } from 'node:zlib';
import { cleanEnv } from '../lib/git-run.js';
import { spawnChild } from '../lib/spawn.js';
import type { Logger } from '../lib/logger.js';
import type { GitRun } from '../services/git-hosting/smart-http.js';

/** The service's run (every argument is ours), streamed with this logger. */
export type GitServiceRun = Omit<GitRun, 'streamed'> & { logger: Logger };

class LimitExceeded extends Error {}

/** Counts bytes through; fails past `max`, and tells the idle timer something moved. */
function limiter(max: number, onData: () => void): Transform {
  let seen = 0;
  return new Transform({
    transform(chunk: Buffer, _enc, cb: TransformCallback) {
      seen += chunk.length;
      onData();
      if (seen > max) return cb(new LimitExceeded());
      cb(null, chunk);
    },
  });
}

function errorBody(status: number, error: string, message: string): string {
  return JSON.stringify({ error, message });
}

export function runGitService(req: Request, res: Response, run: GitServiceRun): Promise<void> {
  return new Promise((resolve) => {
    // Its error listener first: a git the system will not start (EMFILE, EAGAIN) is a 503 for this request.
    const child: ChildProcess = spawnChild('git-http', 'git', run.args, { env: cleanEnv(run.env), stdio: [run.input ? 'pipe' : 'ignore', 'pipe', 'pipe'], shell: false }, () =>
      child.pid === undefined ? neverStarted() : fail(503, 'Unavailable', 'git could not be started.'),
    );
    let headSent = false;
    let finished = false;
    let failure: { status: number; error: string; message: string } | null = null;
    let stderr = '';
    let idle: NodeJS.Timeout | undefined;
    const touch = () => {
      if (idle) idle.refresh();
    };
    idle = setTimeout(() => fail(408, 'Request timeout', 'The git transfer stalled.'), run.idleTimeoutMs);

    const kill = () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    };
    /** Stops the transfer: an error response while nothing was sent, else a cut connection. */
    function fail(status: number, error: string, message: string): void {
      if (finished) return;
      failure ??= { status, error, message };
      kill();
    }

    const sendHead = () => {
      if (headSent) return;
      headSent = true;
      res.writeHead(200, {
        'Content-Type': run.contentType,
        'Cache-Control': 'no-cache, max-age=0, must-revalidate',
        Pragma: 'no-cache',
        Expires: 'Fri, 01 Jan 1980 00:00:00 GMT',
      });
      if (run.prefix) res.write(run.prefix);
    };

    /** No git ran (and none will close): answered here, the body left unread. */
    function neverStarted(): void {
      if (finished) return;
      finished = true;
      clearTimeout(idle);
      run.logger.warn({ args: run.args[0] }, 'git could not be started');
      if (!res.headersSent) {
        const body = errorBody(503, 'Unavailable', 'git could not be started.');
        res.writeHead(503, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(body), Connection: 'close', 'Retry-After': '5' });
        res.end(body);
      } else res.destroy();
      if (!req.complete) req.socket.destroySoon();
      resolve();
    }
    if (!child.stdout || !child.stderr) return;

    child.stdout!.on('data', (chunk: Buffer) => {
      touch();
      if (failure) return;
      sendHead();
      if (!res.write(chunk)) {
        child.stdout!.pause();
        res.once('drain', () => child.stdout!.resume());
      }
    });
    child.stderr!.on('data', (chunk: Buffer) => {
      if (stderr.length < 4096) stderr += chunk.toString('utf8').slice(0, 4096 - stderr.length);
    });

    // The client went away (or the response was cut): nothing more to do for git.
    res.on('close', () => {
      if (!finished) kill();
    });

    if (run.input) {
      const stdin = child.stdin!;
      stdin.on('error', () => {}); // git exiting early (bad request) is reported by its exit code
      const enc = String(req.headers['content-encoding'] ?? 'identity').toLowerCase().trim();
      const count = limiter(run.maxInputBytes, touch);
      count.on('error', (e) =>
        e instanceof LimitExceeded
          ? fail(413, 'Payload too large', `The request body is larger than ${run.maxInputBytes} bytes.`)
          : fail(400, 'Bad request', 'The request body could not be read.'),
      );
      req.on('error', () => fail(400, 'Bad request', 'The request body could not be read.'));
      if (enc === 'gzip' || enc === 'x-gzip') {
        const gunzip = createGunzip();
        gunzip.on('error', () => fail(400, 'Bad request', 'The request body is not valid gzip.'));
        req.pipe(gunzip).pipe(count).pipe(stdin);
      } else {
        req.pipe(count).pipe(stdin);
      }
    }

    child.on('close', (code, signal) => {
      finished = true;
      clearTimeout(idle);
      if (failure || code !== 0) {
        const f = failure ?? { status: 400, error: 'Bad request', message: 'git could not process this request.' };
        if (!failure) run.logger.debug({ exit_code: code, signal, stderr: stderr.trim() }, 'git service refused a request');
        if (!headSent && !res.headersSent) {
          const body = errorBody(f.status, f.error, f.message);
          res.writeHead(f.status, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(body), Connection: 'close' });
          res.end(body);
        } else if (failure) {
          res.destroy(); // cut by us mid-stream: a half-sent pack must not look complete
        } else {
          res.end(); // git's own error (an `ERR` packet) was sent: the client shows it
        }
        // Whatever the client still sends is read and dropped, so it sees the answer.
        if (run.input && !req.complete) {
          req.unpipe();
          req.resume();
          setTimeout(() => req.socket.destroy(), 5000).unref();
        }
      } else {
        sendHead();
        res.end();
      }
      resolve();
    });
  });
}
