/** A Server-Sent Events reader over node:http(s) (the CLI's fetch reads whole bodies). */
import type { IncomingMessage } from 'node:http';
import { ApiError, NetworkError, codeForStatus } from './errors.js';

export interface SseMessage {
  event: string;
  data: string;
  id?: string;
}

export interface SseStream {
  /** Resolves once the response headers are in (the stream is then live). */
  opened: Promise<void>;
  messages: AsyncIterable<SseMessage>;
  close(): void;
}

export function openSse(url: string, headers: Record<string, string>): SseStream {
  const ac = new AbortController();
  const queue: SseMessage[] = [];
  let wake: (() => void) | undefined;
  let ended = false;
  let failure: unknown;
  let opened!: () => void;
  let failedOpen!: (e: unknown) => void;
  const openedP = new Promise<void>((resolve, reject) => {
    opened = resolve;
    failedOpen = reject;
  });
  openedP.catch(() => {});
  const finish = (err?: unknown) => {
    if (ended) return;
    ended = true;
    failure = err;
    wake?.();
  };

  void (async () => {
    const u = new URL(url);
    const mod = u.protocol === 'https:' ? (await import('node:https')).default : (await import('node:http')).default;
    const req = mod.request(u, { method: 'GET', headers: { accept: 'text/event-stream', ...headers }, signal: ac.signal }, (res: IncomingMessage) => {
      if ((res.statusCode ?? 0) >= 400) {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => {
          let b: Record<string, unknown> = {};
          try {
            b = JSON.parse(body) as Record<string, unknown>;
          } catch {
            /* not JSON */
          }
          const reason = typeof b.error === 'string' ? b.error : `HTTP ${res.statusCode}`;
          const err = new ApiError(res.statusCode!, codeForStatus(res.statusCode!, reason), reason, typeof b.message === 'string' ? b.message : reason, b);
          failedOpen(err);
          finish(err);
        });
        return;
      }
      opened();
      let buf = '';
      let ev: SseMessage = { event: 'message', data: '' };
      let hasData = false;
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        buf += chunk;
        let nl: number;
        while ((nl = buf.indexOf('\n')) >= 0) {
          const line = buf.slice(0, nl).replace(/\r$/, '');
          buf = buf.slice(nl + 1);
          if (line === '') {
            if (hasData) queue.push(ev);
            ev = { event: 'message', data: '' };
            hasData = false;
            continue;
          }
          if (line.startsWith(':')) continue;
          const i = line.indexOf(':');
          const field = i < 0 ? line : line.slice(0, i);
          const value = i < 0 ? '' : line.slice(i + 1).replace(/^ /, '');
          if (field === 'data') {
            ev.data = hasData ? `${ev.data}\n${value}` : value;
            hasData = true;
          } else if (field === 'event') ev.event = value;
          else if (field === 'id') ev.id = value;
        }
        wake?.();
      });
      res.on('end', () => finish());
      res.on('error', (e) => finish(e));
    });
    req.on('error', (e) => {
      const err = ac.signal.aborted ? undefined : new NetworkError(u.origin, e);
      failedOpen(err ?? e);
      finish(err);
    });
    req.end();
  })();

  return {
    opened: openedP,
    close() {
      ac.abort();
      finish();
    },
    messages: {
      async *[Symbol.asyncIterator]() {
        for (;;) {
          while (queue.length) yield queue.shift()!;
          if (ended) {
            if (failure) throw failure;
            return;
          }
          await new Promise<void>((r) => (wake = r));
          wake = undefined;
        }
      },
    },
  };
}
