/**
 * A "sandbox-side" web app for preview tests: an HTTP server on loopback that a session's
 * daemon reaches through `/proxy/<port>` (the process provider shares the host's loopback),
 * recording every request it sees. Its pages are whatever the test hands it, such as a
 * page that attacks the dashboard which frames it.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Seen {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

export interface PreviewApp {
  port: number;
  seen: Seen[];
  close(): Promise<void>;
}

export type Route = (req: http.IncomingMessage, res: http.ServerResponse, body: string) => boolean | void;

export async function startPreviewApp(route: Route = () => false): Promise<PreviewApp> {
  const seen: Seen[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (body += c));
    req.on('end', () => {
      seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
      if (route(req, res, body)) return;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ url: req.url }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as AddressInfo).port,
    seen,
    close: () => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }),
  };
}

/** A request to this server as a browser would address a preview host (Host set, no redirects followed). */
export function hostRequest(serverUrl: string, host: string, path: string, headers: Record<string, string> = {}, method = 'GET'): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> {
  const u = new URL(serverUrl);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: u.hostname, port: u.port, path, method, headers: { ...headers, host } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end();
  });
}
