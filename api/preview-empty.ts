import type http from 'node:http';

/**
 * What a preview shows while nothing listens on its port: the daemon answers its 502
 * "Nothing answered on port N." as JSON, which a frame renders as nothing at all. A person
 * opening the preview gets a page saying so and how to start a server; it checks again
 * every few seconds, so the app appears once it listens.
 */
const MAX = 4096;

/**
 * The upstream's body up to a few KiB: `complete` when that was all of it; otherwise the
 * stream is paused after `head`, for the caller to send `head` and pipe the rest (a large
 * 502 is an app's own page, passed through untouched).
 */
export function readSmallBody(r: http.IncomingMessage): Promise<{ head: Buffer; complete: boolean } | null> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const done = (v: { head: Buffer; complete: boolean } | null) => {
      r.off('data', onData);
      r.off('end', onEnd);
      r.off('error', onError);
      resolve(v);
    };
    const onData = (c: Buffer) => {
      chunks.push(c);
      size += c.length;
      if (size > MAX) {
        r.pause();
        done({ head: Buffer.concat(chunks), complete: false });
      }
    };
    const onEnd = () => done({ head: Buffer.concat(chunks), complete: true });
    const onError = () => done(null);
    r.on('data', onData);
    r.on('end', onEnd);
    r.on('error', onError);
  });
}

/** The daemon's "nothing answered on this port" (agentd/proxy.ts, raw-proxy/relay.ts). */
export function isNothingListening(body: Buffer, port: number): boolean {
  try {
    const j = JSON.parse(body.toString('utf8')) as { message?: unknown };
    return j.message === `Nothing answered on port ${port}.`;
  } catch {
    return false;
  }
}

export function nothingListensPage(port: number): string {
  const p = String(port);
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta http-equiv="refresh" content="5"><title>Nothing listens on port ${p} yet</title>
<style>body{font:15px/1.5 system-ui,sans-serif;color:#333;max-width:40em;margin:3em auto;padding:0 1em}code{background:#f3f3f3;padding:.1em .3em;border-radius:3px}</style></head>
<body><main data-preview-empty="${p}"><h1>Nothing listens on port ${p} yet</h1>
<p>Start a server in the session on port ${p}, e.g. ask the agent to <q>start the dev server on port ${p}</q>, or run <code>python3 -m http.server ${p}</code> or <code>npm run dev -- --port ${p}</code> in the sandbox.</p>
<p>This page checks again every 5 seconds.</p></main></body></html>`;
}
