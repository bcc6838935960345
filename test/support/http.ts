import path from 'node:path';
import { sandboxFetch, socketUrl } from '../../lib/sandbox-dial.js';

/** A small JSON client for API tests. `base` may be a sandbox's gateway socket (`gatewayUrl`). */
export interface Res<T = any> {
  status: number;
  body: T;
  headers: Headers;
}

export function client(base: string, token?: string) {
  const call = async <T = any>(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Res<T>> => {
    const res = await sandboxFetch(base, path, {
      method,
      headers: {
        ...(token ? { authorization: `Bearer ${token}` } : {}),
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
        ...headers,
      },
      ...(body !== undefined ? { body: typeof body === 'string' ? body : JSON.stringify(body) } : {}),
    });
    const text = await res.text();
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
 * A sandbox's gateway socket as the sandbox reaches the server (`client(gatewayUrl(...), token)`):
 * the one door where that sandbox's credentials are accepted.
 */
export const gatewayUrl = (dataDir: string, sandboxId: string): string => socketUrl(path.join(dataDir, 'sandboxes', sandboxId, 'gw', 'gateway.sock'));
