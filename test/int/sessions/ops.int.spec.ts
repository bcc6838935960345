import { expect } from 'chai';
import { bootstrapUser } from '../../../services/accounts/service.js';
import { client } from '../../support/http.js';
import { spawnTestServer } from '../../support/server.js';
import { processFixture } from '../../support/suite.js';
import { fakeRuntime, killSandboxes, killSandboxesUnder, waitForStatus, withSessionProject } from '../../support/sessions.js';

describe('sessions: cap, idle sweep, crash recovery', function () {
  this.timeout(120_000);

  it('the cap holds under 20 parallel creates (cap 3): exactly 3 admitted, 17 refused with 429', () =>
    withSessionProject({ slug: 'cap', env: { SVC_SESSION_CAP: '5' }, poolSize: 12 }, async ({ srv, api, sessions }) => {
      // The per-account override beats SVC_SESSION_CAP.
      await srv.db.db.run({ text: 'UPDATE accounts SET session_cap = 3 WHERE account_id = $1', values: [srv.accountId] });
      const results = await Promise.all(Array.from({ length: 20 }, () => api.post(sessions, {})));
      const codes = results.map((r) => r.status).sort();
      expect(codes.filter((c) => c === 201)).to.have.length(3);
      expect(codes.filter((c) => c === 429)).to.have.length(17);
      const refused = results.find((r) => r.status === 429)!;
      expect(refused.body).to.include({ error: 'Too many sessions', limit: 3 });
      expect(refused.headers.get('retry-after')).to.be.a('string');
      const live = await srv.db.db.one<{ n: number }>({ text: "SELECT count(*)::int AS n FROM project_sessions WHERE status IN ('provisioning','running')", values: [] });
      expect(live!.n).to.equal(3);
      // Stopping one frees a slot.
      const first = results.find((r) => r.status === 201)!.body.session.session_id;
      await waitForStatus(api, `${sessions}/${first}`, ['running', 'failed']);
      expect((await api.post(`${sessions}/${first}/stop`, {})).status).to.equal(200);
      expect((await api.post(sessions, {})).status).to.equal(201);
      expect((await api.post(sessions, {})).status).to.equal(429);
      // Restarting a stopped session counts against the cap too.
      expect((await api.post(`${sessions}/${first}/restart`, {})).status).to.equal(429);
    }));

  it('the idle sweep stops sessions with no activity; proxied requests keep one alive', () =>
    withSessionProject({ slug: 'idle', env: { SVC_SESSION_IDLE_MINUTES: '0.05' } }, async ({ api, sessions }) => {
      const a = (await api.post(sessions, {})).body.session.session_id;
      const b = (await api.post(sessions, {})).body.session.session_id;
      await waitForStatus(api, `${sessions}/${a}`, ['running']);
      await waitForStatus(api, `${sessions}/${b}`, ['running']);
      let keepAlive = true;
      const pinger = (async () => {
        while (keepAlive) {
          await api.get(`${sessions}/${b}/agent/fake/hello`);
          await new Promise((r) => setTimeout(r, 300));
        }
      })();
      try {
        const stopped = await waitForStatus(api, `${sessions}/${a}`, ['stopped'], 30_000);
        expect(stopped.status).to.equal('stopped');
        const events = (await api.get(`${sessions}/${a}/events`)).body.events;
        expect(events.find((e: any) => e.type === 'SessionStopped').data.reason).to.equal('idle');
        expect((await api.get(`${sessions}/${b}`)).body.session.status).to.equal('running');
      } finally {
        keepAlive = false;
        await pinger;
      }
      const bs = await waitForStatus(api, `${sessions}/${b}`, ['stopped'], 30_000);
      expect(bs.status).to.equal('stopped');
    }));

  describe('kill -9 of the server during provisioning', () => {
    const fx = processFixture('svc-sess-crash-', async ({ db, dataDir }) => {
      await killSandboxes(db);
      await killSandboxesUnder(dataDir);
    });

    for (const point of ['session.after-branch-cut', 'session.after-sandbox-start']) {
      it(`after a crash at ${point}, a restarted server ends the session running`, async () => {
        const env = { DATABASE_URL: fx.db.url, SVC_DATA_DIR: fx.dataDir, LOG_LEVEL: process.env.SVC_TEST_DEBUG ? 'debug' : 'warn', SVC_AGENT_RUNTIME: fakeRuntime };
        const { token } = (await bootstrapUser(fx.db.db, { email: 'crash@example.test' })).token;
        const slug = point.replace(/[^a-z]+/g, '-');
        const first = await spawnTestServer({ ...env, SVC_FAILPOINTS: point });
        const api1 = client(first.url, token);
        expect((await api1.post('/v1/projects', { name: slug, slug, repo_url: fx.repo.url })).status).to.equal(201);
        const created = await api1.post(`/v1/projects/${slug}/sessions`, {});
        expect(created.status).to.equal(201);
        // The worker reaches the failpoint and the process kills itself.
        const died = await Promise.race([
          new Promise<boolean>((r) => (first.proc.exitCode !== null || first.proc.signalCode !== null ? r(true) : first.proc.once('exit', () => r(true)))),
          new Promise<boolean>((r) => setTimeout(() => r(false), 30_000)),
        ]);
        if (!died) await first.stop();
        expect(first.proc.signalCode, first.output().slice(-2000)).to.equal('SIGKILL');
        const id = created.body.session.session_id;
        const row = await fx.db.db.one<{ status: string }>({ text: 'SELECT status FROM project_sessions WHERE session_id = $1', values: [id] });
        expect(row!.status).to.equal('provisioning');

        const second = await spawnTestServer(env);
        try {
          const api2 = client(second.url, token);
          const s = await waitForStatus(api2, `/v1/projects/${slug}/sessions/${id}`, ['running', 'failed'], 60_000);
          expect(s.status, JSON.stringify(s.error)).to.equal('running');
          if (process.env.SVC_TEST_DEBUG) console.log(second.output());
          expect(fx.repo.tip(id)).to.equal(fx.repo.tip('main'));
          const sandboxes = await fx.db.db.rows<{ state: string }>({ text: 'SELECT state FROM session_sandboxes WHERE session_id = $1 ORDER BY created_at', values: [id] });
          // Started before the crash: re-attached, not started twice.
          expect(sandboxes.map((x) => x.state)).to.deep.equal(['active']);
          expect((await api2.call('DELETE', `/v1/projects/${slug}/sessions/${id}`)).status).to.equal(204);
        } finally {
          expect(await second.stop()).to.equal(0);
        }
      });
    }
  });
});
