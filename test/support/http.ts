import { isWatched, recordResponse } from './response-contract.js';

/**
 * A small JSON client for API tests. Every response it reads is checked against the OpenAPI
 * document (test/support/response-contract.ts); an in-process test server is checked on
 * its own side instead, so this covers spawned servers.
 */
export interface Res<T = any> {
  status: number;
  body: T;
  headers: Headers;
}

export function client(base: string, token?: string) {
  const call = async <T = any>(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Res<T>> => {
    const res = await fetch(`${base}${path}`, {
      method,
      headers: {
        ...(token ? { authorization: `Bearer ${token}` } : {}),
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
        ...headers,
      },
      ...(body !== undefined ? { body: typeof body === 'string' ? body : JSON.stringify(body) } : {}),
    });
    const text = await res.text();
    if (!isWatched(base)) recordResponse({ method, url: new URL(`${base}${path}`).pathname, status: res.status, body: text, ...(res.headers.get('content-type') ? { contentType: res.headers.get('content-type')! } : {}) });
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      /* not JSON */
    }
    return { status: res.status, body: parsed as T, headers: res.headers };
  };
  return {
    get: <T = any>(p: string) => call<T>('GET', p),
    post: <T = any>(p: string, b?: unknown) => call<T>('POST', p, b),
    patch: <T = any>(p: string, b?: unknown) => call<T>('PATCH', p, b),
    call,
  };
}

/**
 * One HTTP request from a chosen loopback source address (127.0.0.2, 127.0.0.3 ... are
 * other clients to the server), for per-client limits.
 */
export function requestFrom(
  localAddress: string,
  url: string,
  opts: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; text: string }> {
  return new Promise((resolve, reject) => {
    import('node:http').then(({ request }) => {
      const req = request(url, { method: opts.method ?? 'GET', headers: opts.headers ?? {}, localAddress, agent: false }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text }));
        res.on('error', reject);
      });
      req.on('error', reject);
      req.end(opts.body);
    }, reject);
  });
}
