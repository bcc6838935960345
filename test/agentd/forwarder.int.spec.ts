import { mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { forwardAll, loopbackForwards } from '../../agentd/forwarder.js';
import { freePort } from '../support/server.js';

/** svc-entrypoint's loopback forwards: one generic list of port→socket pairs (the gateway, the egress proxy). */
describe('agentd forwarder: loopback port→socket pairs', () => {
  it('names a pair only when both its variables are set', () => {
    expect(loopbackForwards({ SVC_GATEWAY_PORT: '4080', SVC_GATEWAY_SOCKET: '/run/svc/gw/gateway.sock', SVC_EGRESS_PORT: '3128', SVC_EGRESS_SOCKET: '/run/svc/gw/egress.sock' })).to.deep.equal([
      { port: 4080, socket: '/run/svc/gw/gateway.sock' },
      { port: 3128, socket: '/run/svc/gw/egress.sock' },
    ]);
    expect(loopbackForwards({ SVC_GATEWAY_PORT: '4080', SVC_GATEWAY_SOCKET: '/g', SVC_EGRESS_PORT: '3128' })).to.deep.equal([{ port: 4080, socket: '/g' }]);
    expect(loopbackForwards({})).to.deep.equal([]);
  });

  it('each port reaches its own socket, byte for byte; a port already taken fails the whole', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'svc-fwd-'));
    const servers: net.Server[] = [];
    try {
      const sockets = ['a.sock', 'b.sock'].map((n) => path.join(dir, n));
      for (const [i, at] of sockets.entries()) {
        const s = net.createServer((c) => c.end(`socket ${i}`));
        await new Promise<void>((r) => s.listen(at, () => r()));
        servers.push(s);
      }
      const ports = [await freePort(), await freePort()];
      servers.push(...(await forwardAll(ports.map((port, i) => ({ port, socket: sockets[i]! })))));
      const read = (port: number) =>
        new Promise<string>((resolve, reject) => {
          let got = '';
          net.connect(port, '127.0.0.1').on('data', (d) => (got += d)).on('end', () => resolve(got)).on('error', reject);
        });
      expect(await read(ports[0]!)).to.equal('socket 0');
      expect(await read(ports[1]!)).to.equal('socket 1');
      // The first port is taken now: nothing of the second attempt stays listening.
      const spare = await freePort();
      let failed: Error | undefined;
      await forwardAll([{ port: spare, socket: sockets[0]! }, { port: ports[0]!, socket: sockets[1]! }]).catch((e: Error) => (failed = e));
      expect(failed?.message).to.match(/EADDRINUSE/);
      const probe = net.createServer();
      await new Promise<void>((resolve, reject) => probe.once('error', reject).listen(spare, '127.0.0.1', () => resolve()));
      await new Promise<void>((r) => probe.close(() => r()));
    } finally {
      for (const s of servers) s.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
