/**
 * A client that streams a large request body the way an attacker would: headers, then
 * chunks as fast as the server takes them (backpressure respected), over TCP or a Unix
 * socket. It reports the answer and how many body bytes the socket accepted, so a spec
 * can tell a body the server read from one it refused unread.
 */
import net from 'node:net';

export interface PushResult {
  /** The response's status (0: none came). */
  status: number;
  /** The raw response text (head and body). */
  response: string;
  /** Body bytes the connection accepted before it was closed or the body was done. */
  accepted: number;
}

export function pushBody(
  to: { port: number } | { socketPath: string },
  opts: { method: string; path: string; headers: Record<string, string>; bytes: number; chunked?: boolean; prefix?: Buffer },
): Promise<PushResult> {
  return new Promise((resolve) => {
    const sock = 'port' in to ? net.connect(to.port, '127.0.0.1') : net.connect(to.socketPath);
    let response = '';
    let accepted = 0;
    let closed = false;
    const headers = { host: 'localhost', ...opts.headers, ...(opts.chunked ? { 'transfer-encoding': 'chunked' } : { 'content-length': String(opts.bytes) }) };
    const head = `${opts.method} ${opts.path} HTTP/1.1\r\n${Object.entries(headers).map(([k, v]) => `${k}: ${v}`).join('\r\n')}\r\n\r\n`;
    const chunk = Buffer.alloc(64 * 1024, 0x61);
    let sentAll = false;
    const endIfAnswered = () => {
      if (sentAll && /\r\n\r\n/.test(response)) sock.end();
    };
    sock.on('data', (d) => {
      response += d.toString('latin1');
      endIfAnswered();
    });
    sock.on('error', () => {});
    sock.on('close', () => {
      closed = true;
      const m = /^HTTP\/1\.1 (\d{3})/.exec(response);
      resolve({ status: m ? Number(m[1]) : 0, response, accepted });
    });
    const write = (buf: Buffer) =>
      new Promise<void>((done) => {
        if (closed || sock.destroyed) return done();
        const framed = opts.chunked ? Buffer.concat([Buffer.from(`${buf.length.toString(16)}\r\n`), buf, Buffer.from('\r\n')]) : buf;
        sock.write(framed, (err) => {
          if (!err) accepted += buf.length;
          done();
        });
      });
    sock.on('connect', async () => {
      sock.write(head);
      let left = opts.bytes;
      if (opts.prefix) {
        await write(opts.prefix);
        left -= opts.prefix.length;
      }
      while (left > 0 && !closed && !sock.destroyed) {
        const n = Math.min(left, chunk.length);
        await write(n === chunk.length ? chunk : chunk.subarray(0, n));
        left -= n;
      }
      if (!closed && !sock.destroyed) {
        if (opts.chunked) sock.write('0\r\n\r\n');
        // The whole body went: the answer comes next; the connection may stay open (keep-alive).
        sentAll = true;
        endIfAnswered();
      }
    });
  });
}
