import { closeSync, constants, fstatSync, openSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { Readable, type Duplex } from 'node:stream';

/**
 * How the server reaches a sandbox's daemon (or an app sandbox's app): a URL, `http://…`
 * for a sandbox on the host's network (process, kubernetes), or `unix:<path>` for a
 * sandbox in a network namespace of its own (bwrap, docker), whose daemon listens on a
 * Unix socket in a directory it can write.
 *
 * Because the sandbox can write that directory, the socket is never dialled by its path:
 * the parent directory (the server's, which no sandbox can write) is opened without
 * following a link, the socket is opened relative to it with O_PATH|O_NOFOLLOW (so a
 * symlink the sandbox planted is opened as the link itself), the result must be a socket,
 * and the connect goes through `/proc/self/fd/<n>`. A sandbox that replaces its socket
 * with a link to PostgreSQL's socket, the docker socket or another sandbox's socket gets
 * a refusal; all it can put there is a socket of its own, which is where the server was
 * going anyway. (`/proc/self/fd` also keeps the path under sun_path's 108 bytes.)
 */
export const SOCKET_URL_PREFIX = 'unix:';

const O_PATH = 0o10000000; // Linux; not in fs.constants

export const socketUrl = (socketPath: string): string => SOCKET_URL_PREFIX + socketPath;
export const isSocketUrl = (url: string): boolean => url.startsWith(SOCKET_URL_PREFIX);

export class SandboxDialError extends Error {
  readonly code = 'ESANDBOXDIAL';
}

/** Opens the socket at `socketPath` as described above; the caller closes the fd. */
export function openSocketPath(socketPath: string): number {
  const dirFd = openSync(path.dirname(socketPath), constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
  try {
    const fd = openSync(`/proc/self/fd/${dirFd}/${path.basename(socketPath)}`, O_PATH | constants.O_NOFOLLOW);
    if (!fstatSync(fd).isSocket()) {
      closeSync(fd);
      throw new SandboxDialError(`${socketPath} is not a socket (a sandbox replaced it?): refused`);
    }
    return fd;
  } finally {
    closeSync(dirFd);
  }
}

/** A connection to the sandbox at `url` (`unix:` or `http://host:port`). */
export function connectSandbox(url: string): net.Socket {
  if (!isSocketUrl(url)) {
    const u = new URL(url);
    return net.connect({ host: u.hostname.replace(/^\[|\]$/g, ''), port: Number(u.port || 80), noDelay: true });
  }
  let fd: number;
  try {
    fd = openSocketPath(url.slice(SOCKET_URL_PREFIX.length));
  } catch (err) {
    const s = new net.Socket();
    process.nextTick(() => s.destroy(err as Error));
    return s;
  }
  const s = net.connect({ path: `/proc/self/fd/${fd}` });
  s.setNoDelay(true);
  // connect() resolves the path synchronously in the kernel: the fd is no longer needed.
  closeSync(fd);
  return s;
}

/** The Host header value to send to the sandbox at `url`. */
export const sandboxHost = (url: string): string => (isSocketUrl(url) ? 'localhost' : new URL(url).host);

/**
 * An http.request to the sandbox at `url`. For `unix:` the socket is opened as above and
 * handed over as `socketPath: /proc/self/fd/<n>` (no Agent: one connection per request);
 * the descriptor is closed once the connection is made or has failed. (`socketPath`, not
 * `createConnection`: request interceptors such as nock's drop the latter.)
 */
export function sandboxRequest(url: string, options: http.RequestOptions, onResponse?: (res: http.IncomingMessage) => void): http.ClientRequest {
  if (!isSocketUrl(url)) {
    const u = new URL(url);
    return http.request({ ...options, host: u.hostname.replace(/^\[|\]$/g, ''), port: Number(u.port || 80) }, onResponse);
  }
  let fd: number | undefined;
  let failed: Error | undefined;
  try {
    fd = openSocketPath(url.slice(SOCKET_URL_PREFIX.length));
  } catch (err) {
    failed = err as Error;
  }
  const release = () => {
    if (fd === undefined) return;
    closeSync(fd);
    fd = undefined;
  };
  // A refused path still makes a request object, which fails at once with the reason.
  const req = http.request({ ...options, socketPath: fd === undefined ? '/nonexistent/refused.sock' : `/proc/self/fd/${fd}`, agent: false }, onResponse);
  if (failed) {
    const err = failed;
    process.nextTick(() => req.destroy(err));
  }
  req.once('socket', (s) => {
    s.once('connect', release);
    s.once('close', release);
  });
  req.once('error', release);
  req.once('close', release);
  return req;
}

/**
 * `fetch` for a sandbox URL: global fetch for `http://`, an http.request over the
 * hardened connection for `unix:`. Enough of fetch for the server's control calls.
 */
export async function sandboxFetch(
  url: string,
  pathAndQuery: string,
  init: { method?: string; headers?: Record<string, string>; body?: string; signal?: AbortSignal; redirect?: 'manual' } = {},
): Promise<Response> {
  if (!isSocketUrl(url)) return fetch(`${url}${pathAndQuery}`, init);
  return new Promise<Response>((resolve, reject) => {
    const headers: Record<string, string> = { host: 'localhost', ...init.headers };
    if (init.body !== undefined) headers['content-length'] = String(Buffer.byteLength(init.body));
    const req = sandboxRequest(url, { method: init.method ?? 'GET', path: pathAndQuery, headers, ...(init.signal ? { signal: init.signal } : {}) }, (res) => {
      const h = new Headers();
      for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) h.set(k, Array.isArray(v) ? v.join(', ') : v);
      const status = res.statusCode ?? 502;
      const noBody = status === 204 || status === 304 || (status >= 100 && status < 200);
      if (noBody) res.resume();
      resolve(new Response(noBody ? null : (Readable.toWeb(res) as ReadableStream), { status, headers: h }));
    });
    req.on('error', reject);
    req.end(init.body);
  });
}

/**
 * Relays a WebSocket (or any) upgrade to a sandbox: the request line and `headers` as given,
 * then the bytes the client already sent, then both ways. Returns the upstream socket.
 */
export function relayUpgrade(url: string, req: http.IncomingMessage, path: string, headers: http.OutgoingHttpHeaders, client: Duplex, head: Buffer): net.Socket {
  const up = connectSandbox(url);
  up.once('connect', () => {
    let head1 = `${req.method} ${path} HTTP/1.1\r\nConnection: Upgrade\r\nUpgrade: ${req.headers.upgrade ?? 'websocket'}\r\n`;
    for (const [k, v] of Object.entries(headers)) for (const one of Array.isArray(v) ? v : [v]) if (one !== undefined) head1 += `${k}: ${String(one)}\r\n`;
    up.write(head1 + '\r\n');
    if (head.length) up.write(head);
    up.pipe(client);
    client.pipe(up);
  });
  up.on('error', () => client.destroy());
  client.on('close', () => up.destroy());
  return up;
}
