import http from 'node:http';
import net from 'node:net';

/** A loopback HTTP server that counts the TCP connections reaching it. */
export interface CountingServer {
  host: string;
  port: number;
  connections: number;
  close(): Promise<void>;
}

export async function countingServer(host: string, name: string): Promise<CountingServer> {
  const srv = http.createServer((req, res) => res.end(`${name} ${req.method} ${req.url} host=${req.headers.host} via=${req.headers['proxy-authorization'] ?? '-'}`));
  const out = { host, port: 0, connections: 0, close: () => new Promise<void>((r) => (srv.closeAllConnections(), srv.close(() => r()))) };
  srv.on('connection', () => out.connections++);
  await new Promise<void>((resolve, reject) => srv.once('error', reject).listen(0, host, () => resolve()));
  out.port = (srv.address() as net.AddressInfo).port;
  return out;
}

/** Reads from a socket until `until` holds on what came, or the socket ends. */
function readUntil(socket: net.Socket, until: (s: string) => boolean): Promise<string> {
  return new Promise((resolve) => {
    let got = '';
    const done = () => {
      socket.off('data', onData);
      resolve(got);
    };
    const onData = (d: Buffer) => {
      got += d.toString('latin1');
      if (until(got)) done();
    };
    socket.on('data', onData);
    socket.once('end', done);
    socket.once('close', done);
  });
}

/**
 * `CONNECT target` through the proxy at `port`. 200: the open tunnel, through which one
 * plain HTTP request is sent (`then`), answering its response text. Else: the status and
 * the proxy's body.
 */
export async function viaConnect(port: number, target: string, then = 'GET /tunnel HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'): Promise<{ status: number; body: string }> {
  const socket = net.connect(port, '127.0.0.1');
  await new Promise<void>((r, j) => socket.once('connect', r).once('error', j));
  socket.write(`CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\nProxy-Authorization: Basic c2FuZGJveDpvdGhlcg==\r\n\r\n`);
  const head = await readUntil(socket, (s) => s.includes('\r\n\r\n'));
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0);
  try {
    if (status !== 200) {
      const rest = head.includes('\r\n\r\n') ? await readUntil(socket, () => false) : '';
      return { status, body: (head + rest).split('\r\n\r\n').slice(1).join('\r\n\r\n') };
    }
    socket.write(then);
    const answer = await readUntil(socket, () => false);
    return { status, body: (head.split('\r\n\r\n').slice(1).join('') + answer).split('\r\n\r\n').slice(1).join('\r\n\r\n') };
  } finally {
    socket.destroy();
  }
}

/** An absolute-form request (`GET http://…`) through the proxy at `port`. */
export function viaGet(port: number, url: string, method = 'GET', body?: string): Promise<{ status: number; body: string; headers: http.IncomingHttpHeaders }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method, path: url, agent: false, headers: { host: 'decoy.test', 'proxy-authorization': 'Basic c2FuZGJveDpvdGhlcg==' } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text, headers: res.headers }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}
