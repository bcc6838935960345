/**
 * `git http-backend` behind a minimal Node HTTP front (CGI, streamed both ways, Basic
 * auth checked): the floor `npm run bench -- git-http` compares the server's smart HTTP
 * with, the way a plain git host would run it; also the foreign git host the tests push
 * to and clone from (test/git/support/http-git-server.ts).
 */
import { spawn } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface HttpBackend {
  url: string;
  /** Requests that carried an Authorization header (to prove credentials were sent, and how often). */
  readonly authAttempts: number;
  /** Every request as `<method> <path>[?<query>]`, in arrival order (tests count fetches and pushes by it). */
  readonly requests: string[];
  close(): Promise<void>;
}

export async function startHttpBackend(root: string, password: string, opts: { user?: string; realm?: string } = {}): Promise<HttpBackend> {
  const user = opts.user ?? 'x';
  const expected = `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
  let authAttempts = 0;
  const requests: string[] = [];
  const server = http.createServer((req, res) => {
    requests.push(`${req.method ?? 'GET'} ${req.url ?? '/'}`);
    if (req.headers.authorization) authAttempts++;
    if (req.headers.authorization !== expected) {
      res.writeHead(401, { 'WWW-Authenticate': `Basic realm="${opts.realm ?? 'bench'}"` }).end();
      return;
    }
    const url = new URL(req.url ?? '/', 'http://localhost');
    const child = spawn('git', ['http-backend'], {
      env: {
        PATH: process.env.PATH ?? '/usr/bin:/bin',
        GIT_CONFIG_NOSYSTEM: '1',
        GIT_CONFIG_GLOBAL: '/dev/null',
        GIT_PROJECT_ROOT: root,
        GIT_HTTP_EXPORT_ALL: '1',
        REMOTE_USER: user, // enables receive-pack (push)
        REMOTE_ADDR: '127.0.0.1',
        REQUEST_METHOD: req.method ?? 'GET',
        PATH_INFO: decodeURIComponent(url.pathname),
        QUERY_STRING: url.search.slice(1),
        CONTENT_TYPE: req.headers['content-type'] ?? '',
        ...(req.headers['content-encoding'] ? { HTTP_CONTENT_ENCODING: String(req.headers['content-encoding']) } : {}),
        ...(req.headers['git-protocol'] ? { GIT_PROTOCOL: String(req.headers['git-protocol']) } : {}),
      },
      stdio: ['pipe', 'pipe', 'ignore'],
    });
    req.pipe(child.stdin);
    child.stdin.on('error', () => {});
    let head = Buffer.alloc(0);
    let done = false;
    child.stdout.on('data', (chunk: Buffer) => {
      if (done) {
        if (!res.write(chunk)) {
          child.stdout.pause();
          res.once('drain', () => child.stdout.resume());
        }
        return;
      }
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf('\r\n\r\n');
      if (end < 0) return;
      done = true;
      let status = 200;
      for (const line of head.subarray(0, end).toString('latin1').split('\r\n')) {
        const colon = line.indexOf(':');
        if (colon < 0) continue;
        const name = line.slice(0, colon).trim();
        const value = line.slice(colon + 1).trim();
        if (name.toLowerCase() === 'status') status = parseInt(value, 10);
        else res.setHeader(name, value);
      }
      res.writeHead(status);
      res.write(head.subarray(end + 4));
    });
    child.on('close', () => res.end());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    get authAttempts() {
      return authAttempts;
    },
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
