/**
 * A provider test's stand-in for the server's end of the sandbox gateway: each sandbox's
 * gateway socket forwards, byte for byte, to one loopback HTTP "front" that routes
 * `/projects/*` to the fake API and everything else to the test's git server. The
 * sandbox sees only 127.0.0.1:4080 (its own loopback), as with the real server.
 */
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { chmod, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import type { SandboxGatewayHost } from '../../../infra/sandbox/port.js';

export interface TestGateway extends SandboxGatewayHost {
  url: string;
  /** Sandbox ids whose gateway socket received a connection. */
  used: Set<string>;
  stop(): Promise<void>;
}

export async function startTestGateway(routes: { api: string; git: string }): Promise<TestGateway> {
  const front = http.createServer((req, res) => {
    const base = new URL(req.url!.startsWith('/v1/') ? routes.api : routes.git);
    const up = http.request({ host: base.hostname, port: base.port, method: req.method, path: req.url, headers: { ...req.headers, host: base.host } }, (r) => {
      res.writeHead(r.statusCode ?? 502, r.headers);
      r.pipe(res);
    });
    up.on('error', () => res.destroy());
    req.pipe(up);
  });
  await new Promise<void>((r) => front.listen(0, '127.0.0.1', () => r()));
  const url = `http://127.0.0.1:${(front.address() as AddressInfo).port}`;
  const servers = new Map<string, net.Server>();
  const used = new Set<string>();
  return {
    url,
    used,
    serverOrigin: () => url,
    async open(sandboxId, dir) {
      const at = path.join(dir, 'gateway.sock');
      await rm(at, { force: true });
      const srv = net.createServer((c) => {
        used.add(sandboxId);
        const up = net.connect(Number(new URL(url).port), '127.0.0.1');
        c.pipe(up).pipe(c);
        c.on('error', () => up.destroy());
        up.on('error', () => c.destroy());
      });
      await new Promise<void>((r) => srv.listen(at, () => r()));
      await chmod(at, 0o666); // a container's user connects
      servers.set(sandboxId, srv);
    },
    async close(sandboxId) {
      servers.get(sandboxId)?.close();
      servers.delete(sandboxId);
    },
    async stop() {
      for (const s of servers.values()) s.close();
      front.closeAllConnections();
      await new Promise<void>((r) => front.close(() => r()));
    },
  };
}
