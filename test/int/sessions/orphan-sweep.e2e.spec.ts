import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { probeBwrap } from '../../../infra/sandbox/bwrap.js';
import { createDockerProvider, DEFAULT_SANDBOX_IMAGE } from '../../../infra/sandbox/docker.js';
import { createProcessProvider } from '../../../infra/sandbox/process.js';
import { sandboxesRoot } from '../../../infra/sandbox/registry.js';
import { silentLogger } from '../../../lib/logger.js';
import type { Executor } from '../../../infra/db/db.js';
import { installIdOf } from '../../../services/sessions/orphans.js';
import { runSvc, sandbox, type Sandbox } from '../../cli/helpers.js';
import { client } from '../../support/http.js';
import { startTestServer } from '../../support/server.js';
import { fakeRuntime, waitForStatus, withSessionProject } from '../../support/sessions.js';
import { skipUnlessCi } from '../../support/skip.js';
import { until } from '../../support/wait.js';

/** Processes whose environment names this sandbox (its entrypoint, daemon, runtime). */
async function processesOf(sandboxId: string): Promise<number> {
  let n = 0;
  for (const pid of await readdir('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    const env = await readFile(`/proc/${pid}/environ`, 'utf8').catch(() => '');
    if (env.includes(`SVC_SANDBOX_ID=${sandboxId}\0`)) n++;
  }
  return n;
}

const installOf = (db: Executor) => installIdOf(db);

/**
 * Sandboxes no live row means to run are removed at start (and on each sweep) by the
 * provider that made them: after a provider switch, after a stop whose teardown never ran;
 * never another install's.
 */
describe('orphan sweep: every loadable provider listed, sandboxes without a live row removed (e2e)', function () {
  this.timeout(180_000);
  let sb: Sandbox;
  before(async () => {
    sb = await sandbox();
  });
  after(() => sb?.cleanup());

  it('process → bwrap: the old provider’s sandboxes go (processes, directories), another install’s stay, `svc sessions rm` removes the session', function () {
    const probe = probeBwrap();
    if (!probe.ok) skipUnlessCi(this, `bwrap: ${probe.reason}`);
    return withSessionProject({ slug: 'orph', env: { SVC_SANDBOX_PROVIDER: 'process' } }, async ({ srv, api, sessions }) => {
      const start = async () => {
        const created = await api.post(sessions, { prompt: 'hello' });
        expect(created.status).to.equal(201);
        const s = await waitForStatus(api, `${sessions}/${created.body.session.session_id}`, ['running', 'failed']);
        expect(s.status, JSON.stringify(s.error)).to.equal('running');
        const row = (await srv.db.db.one<{ sandbox_id: string; provider: string }>({ text: "SELECT sandbox_id::text AS sandbox_id, provider FROM session_sandboxes WHERE session_id = $1 AND state = 'active'", values: [s.session_id] }))!;
        expect(row.provider).to.equal('process'); // rows record their provider
        return { id: s.session_id as string, sandbox: row.sandbox_id, dir: path.join(sandboxesRoot(srv), row.sandbox_id) };
      };
      const kept = await start();
      const lost = await start();
      // A stop whose teardown never ran: the row says stopped, the sandbox still runs.
      await srv.db.db.run({ text: "UPDATE session_sandboxes SET state = 'stopped' WHERE sandbox_id = $1", values: [lost.sandbox] });
      for (const x of [kept, lost]) {
        expect(await processesOf(x.sandbox), x.sandbox).to.be.greaterThan(0);
        expect(existsSync(x.dir)).to.equal(true);
      }
      // Another install's sandbox in the same place (its label names another install): not ours.
      const other = createProcessProvider({ dataDir: srv.dataDir, logger: silentLogger, runtime: fakeRuntime });
      const foreignId = randomUUID();
      const foreign = await other.create({ sandboxId: foreignId, sessionId: randomUUID(), projectId: randomUUID(), accountId: randomUUID(), env: {}, labels: { 'svc.install': randomUUID() } });
      const foreignDir = path.join(sandboxesRoot(srv), foreignId);
      try {
        expect((await other.list!({ 'svc.install': await installOf(srv.db.db) })).map((h) => h.sandboxId).sort()).to.deep.equal([kept.sandbox, lost.sandbox].sort());

        await srv.restart({ SVC_SANDBOX_PROVIDER: 'bwrap' });
        const api = client(srv.url, srv.token); // a new port

        // Both process sandboxes are gone: every process, the directory.
        for (const x of [kept, lost]) {
          await until(async () => (await processesOf(x.sandbox)) === 0 && !existsSync(x.dir), `sandbox ${x.sandbox} removed`);
        }
        expect(existsSync(foreignDir), 'the other install’s sandbox').to.equal(true);
        // The session on the old provider is stopped, and says so; `rm` does what it says.
        const after = (await api.get(`${sessions}/${kept.id}`)).body.session;
        expect(after.status).to.equal('stopped');
        const env = { SVC_API_URL: `${srv.url}/v1`, SVC_CLI_TOKEN: srv.token, SVC_PROJECT_ID: 'orph' };
        const rm = await runSvc(['sessions', 'rm', kept.id, '--yes'], { configPath: sb.configPath, cwd: sb.dir, env });
        expect(rm.code, rm.stderr).to.equal(0);
        expect(rm.stderr).to.include(`Removed session ${kept.id}`);
        expect((await api.get(`${sessions}/${kept.id}`)).status).to.equal(404);
        expect(await processesOf(kept.sandbox)).to.equal(0);
        expect(existsSync(kept.dir)).to.equal(false);
      } finally {
        await other.destroy(foreign);
      }
    });
  });

  it('docker: a second install on the same engine (another database of the same template): each start removes only its own orphans', function () {
    if (spawnSync('docker', ['info'], { encoding: 'utf8' }).status !== 0) skipUnlessCi(this, 'no Docker engine here');
    if (spawnSync('docker', ['image', 'inspect', DEFAULT_SANDBOX_IMAGE], { encoding: 'utf8' }).status !== 0) skipUnlessCi(this, `image ${DEFAULT_SANDBOX_IMAGE} is missing: build it with ops/sandbox-image.sh`);
    // Both servers run the process provider: docker is listed because it is loadable here.
    return withSessionProject({ slug: 'orphd', env: { SVC_SANDBOX_PROVIDER: 'process' } }, async ({ srv }) => {
      const second = await startTestServer({ env: { SVC_SANDBOX_PROVIDER: 'process' } });
      const docker = createDockerProvider({ root: sandboxesRoot(srv), stopGraceSeconds: 1 });
      const make = (install: string) =>
        docker.create({ sandboxId: randomUUID(), sessionId: randomUUID(), projectId: randomUUID(), accountId: randomUUID(), env: {}, labels: { 'svc.install': install } });
      const [ourId, theirId] = [await installOf(srv.db.db), await installOf(second.db.db)];
      expect(ourId).to.not.equal(theirId);
      const ours = await make(ourId); // a crash between create and its row
      const theirs = await make(theirId); // the second install's, no row in our database either
      try {
        await srv.restart();
        await until(() => spawnSync('docker', ['inspect', ours.ref]).status !== 0, 'our orphan container removed');
        expect(existsSync(path.join(sandboxesRoot(srv), ours.sandboxId))).to.equal(false);
        expect(spawnSync('docker', ['inspect', theirs.ref]).status, 'the other install’s container').to.equal(0);
        await second.restart();
        await until(() => spawnSync('docker', ['inspect', theirs.ref]).status !== 0, 'their orphan container removed by their own start');
      } finally {
        await docker.destroy(theirs);
        await docker.destroy(ours);
        await docker.close?.();
        await second.stop();
      }
    });
  });
});
