/**
 * A fetch-shaped transport over node:http/https.
 *
 * Why not the global `fetch`: on Node 20 the first `fetch()` call loads undici and compiles
 * its WASM HTTP parser, ~130 ms per process — more than the whole `svc cr ls` budget. The
 * API client takes any `FetchLike`, so the global `fetch` still plugs in (tests, other
 * runtimes); this one is the default.
 */
import type { IncomingMessage } from 'node:http';

export interface FetchInit {
  method?: string;
  headers?: Record<string, string>;
  body?: string;
  signal?: AbortSignal;
}

/** The subset of a fetch `Response` the API client reads. */
export interface FetchResponse {
  status: number;
  ok: boolean;
  headers: { get(name: string): string | null };
  text(): Promise<string>;
}

export type FetchLike = (url: string, init?: FetchInit) => Promise<FetchResponse>;

export const nodeFetch: FetchLike = async (url, init = {}) => {
  const u = new URL(url);
  // The module object, not the ESM namespace: interceptors (nock) patch `request` on it and
  // a namespace created before the patch would keep the original.
  const mod = u.protocol === 'https:' ? (await import('node:https')).default : (await import('node:http')).default;
  return new Promise<FetchResponse>((resolve, reject) => {
    const req = mod.request(
      u,
      { method: init.method ?? 'GET', headers: init.headers, signal: init.signal },
      (res: IncomingMessage) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () => {
          const body = Buffer.concat(chunks).toString('utf8');
          const status = res.statusCode ?? 0;
          resolve({
            status,
            ok: status >= 200 && status < 300,
            headers: {
              get: (name) => {
                const v = res.headers[name.toLowerCase()];
                return v === undefined ? null : Array.isArray(v) ? v.join(', ') : v;
              },
            },
            text: async () => body,
          });
        });
      },
    );
    req.on('error', reject);
    if (init.body !== undefined) req.write(init.body);
    req.end();
  });
};
