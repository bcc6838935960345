import { expect } from 'chai';
import http from 'node:http';
import net from 'node:net';
import { bootstrapUser } from '../../../services/accounts/service.js';
import { client } from '../../support/http.js';
import { spawnTestServer } from '../../support/server.js';
import { processFixture } from '../../support/suite.js';
import { eventually, until } from '../../support/wait.js';

/**
 * A real `svc-server start` under a file limit of 320 (prlimit), flooded with more
 * connections than it has descriptors while requests that start git arrive: accepts fail
 * (EMFILE), spawns fail (EMFILE), and each of those fails only its own request. The
 * process never exits, and once the flood lets go it answers everything again.
 */
describe('a server out of file descriptors stays up', function () {
  this.timeout(120_000);
  const fx = processFixture('svc-lowfd-');

  it('under a 320-descriptor limit, 1,500 held connections and git requests: the server never exits and answers after', async () => {
    const { token } = (await bootstrapUser(fx.db.db, { email: 'lowfd@example.test' })).token;
    const server = await spawnTestServer({ DATABASE_URL: fx.db.url, SVC_DATA_DIR: fx.dataDir, LOG_LEVEL: 'warn' }, 'start', { launcher: ['prlimit', '--nofile=320:320', '--'] });
    const sockets: net.Socket[] = [];
    try {
      const api = client(server.url, token);
      expect((await api.post('/v1/projects', { name: 'lowfd', slug: 'lowfd' , repo_url: fx.repo.url })).status).to.equal(201);
      await fx.repo.commit('topic', { 'x.txt': 'x\n' });
      const compare = '/v1/projects/lowfd/compare?head=topic';
      expect((await api.get(compare)).status).to.equal(200);

      const port = Number(new URL(server.url).port);
      const open = () =>
        new Promise<void>((resolve) => {
          const s = net.connect(port, '127.0.0.1');
          s.on('error', () => resolve());
          s.on('connect', () => resolve());
          s.on('close', () => resolve());
          sockets.push(s);
        });
      // Connections opened before the flood (kept alive) carry requests that start git
      // while the server has no descriptor left: its spawns fail with EMFILE.
      const agent = new http.Agent({ keepAlive: true, maxSockets: 6 });
      const get = () =>
        new Promise<number | string>((resolve) => {
          const req = http.get(`${server.url}${compare}`, { agent, headers: { authorization: `Bearer ${token}` } }, (res) => {
            res.resume();
            res.on('end', () => resolve(res.statusCode ?? 0));
          });
          req.on('error', () => resolve('no answer'));
        });
      expect(await Promise.all(Array.from({ length: 6 }, get))).to.deep.equal([200, 200, 200, 200, 200, 200]);
      for (let i = 0; i < 1500; i += 100) await Promise.all(Array.from({ length: 100 }, open));
      const statuses: Array<number | string> = [];
      for (let round = 0; round < 5; round++) statuses.push(...(await Promise.all(Array.from({ length: 6 }, get))));
      agent.destroy();
      // Some of them met a full file table (else this test proves nothing).
      expect(statuses.filter((s) => s === 503).length, statuses.join(',')).to.be.greaterThan(0);
      expect(server.proc.exitCode, server.output().slice(-3000)).to.equal(null);
      expect(server.proc.signalCode).to.equal(null);
      // Whatever was answered is an answer of the contract, never a 500.
      expect(statuses.filter((s) => s === 500)).to.deep.equal([]);

      for (const s of sockets) s.destroy();
      await until(() => sockets.every((s) => s.destroyed), 'the flood let go');
      await eventually(async () => (await fetch(`${server.url}/readyz`).then((r) => r.status, () => 0)) === 200, 'the server answers /readyz again', { timeoutMs: 30_000 });
      await eventually(async () => (await api.get(compare)).status === 200, 'git requests work again', { timeoutMs: 30_000 });
      expect(server.proc.exitCode).to.equal(null);
    } finally {
      for (const s of sockets) s.destroy();
      const code = await server.stop();
      expect(code, server.output().slice(-3000)).to.equal(0);
    }
  });
});
