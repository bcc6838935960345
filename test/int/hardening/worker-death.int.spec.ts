import { expect } from 'chai';
import { spawn, type ChildProcess } from 'node:child_process';
import { chmod, mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { bootstrapUser } from '../../../services/accounts/service.js';
import { projectRoot } from '../../../lib/paths.js';
import { createTestDb, type TestDb } from '../../support/db.js';
import { fixtureRepo, type FixtureRepo } from '../../support/repo.js';
import { serveOverHttp } from '../../support/http-remote.js';
import { client } from '../../support/http.js';
import { eventTypes } from '../../support/merges.js';
import { spawnTestServer, TEST_ENV, traversableTempDir } from '../../support/server.js';
import { until } from '../../support/wait.js';

const N = 12;

/** `svc-server worker` in its own process group (so its git children die with it), ready when it says so. */
async function startWorker(env: Record<string, string>): Promise<{ proc: ChildProcess; output: () => string }> {
  const proc = spawn(process.execPath, [path.join(projectRoot, 'dist/ops/svc-server.js'), 'worker'], {
    env: { ...process.env, LOG_LEVEL: 'info', SVC_ALLOW_FILE_REPOS: '1', ...TEST_ENV, PORT: '0', HOST: '127.0.0.1', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let out = '';
  const ready = new Promise<void>((resolve, reject) => {
    const onData = (c: Buffer) => {
      out += c.toString();
      if (out.includes('worker ready')) resolve();
    };
    proc.stdout!.on('data', onData);
    proc.stderr!.on('data', onData);
    proc.once('exit', (code) => reject(new Error(`worker exited (${code}):\n${out}`)));
  });
  await ready;
  return { proc, output: () => out };
}

const killGroup = (p: ChildProcess) => {
  try {
    process.kill(-p.pid!, 'SIGKILL');
  } catch {
    /* gone */
  }
};


describe('merges outlive their workers', function () {
  this.timeout(180_000);
  let t: TestDb;
  let repo: FixtureRepo;
  let dir: string;
  const workers: ChildProcess[] = [];

  before(async () => {
    t = await createTestDb();
    repo = await fixtureRepo();
    dir = await traversableTempDir('svc-workers-');
  });
  after(async () => {
    for (const w of workers) killGroup(w);
    await t?.drop();
    await repo?.cleanup();
    await rm(dir, { recursive: true, force: true });
  });

  it(`two workers SIGKILLed with ${N} merges in flight: a fresh worker merges each exactly once within 10 s of being ready`, async function () {
    // A dead worker's jobs are taken back through its released lock and `job_claims` (infra/queue.ts).
    const env = { DATABASE_URL: t.url, SVC_DATA_DIR: path.join(dir, 'data'), SVC_MERGE_CONCURRENCY: '6', DATABASE_POOL_SIZE: '10' };
    const { token } = (await bootstrapUser(t.db, { email: 'workers@example.test' })).token;
    const heads: string[] = [];
    for (let i = 0; i < N; i++) {
      await repo.commit(`base-${i}`, { [`base-${i}.txt`]: 'base\n' });
      heads.push(await repo.commit(`topic-${i}`, { [`topic-${i}.txt`]: 'work\n' }, { from: 'main' }));
    }
    // From now on every push to the remote stops in its hook while SLOW exists, leaving a
    // mark. The remote is served over HTTP (a file:// repository's own hooks never run), so
    // a held push outlives its killed worker: once released it is declined, as the push
    // that died with its worker when the remote ran under the worker's git.
    const slow = path.join(dir, 'SLOW');
    const marks = path.join(dir, 'marks');
    await mkdir(marks);
    const hook = path.join(repo.bare, 'hooks', 'pre-receive');
    await writeFile(hook, `#!/bin/sh\nif [ -f '${slow}' ]; then touch '${marks}'/$$; while [ -f '${slow}' ]; do sleep 0.05; done; exit 1; fi\nexit 0\n`);
    await chmod(hook, 0o755);
    const http = await serveOverHttp(repo);

    const api = await spawnTestServer(env, 'api');
    try {
      const c = client(api.url, token);
      expect((await c.post('/v1/projects', { name: 'workers', slug: 'workers', repo_url: http.url })).status).to.equal(201);
      const base = '/v1/projects/workers/change-requests';
      const crs = [];
      for (let i = 0; i < N; i++) {
        crs.push((await c.post(base, { title: `W${i}`, head_ref: `topic-${i}`, base_ref: `base-${i}` })).body.change_request);
      }
      // The mirror holds every branch before the workers start (this test is about their
      // death, not about their first fetch).
      expect((await c.get(`${base}/${crs[0].number}/diff`)).status).to.equal(200);
      const w1 = await startWorker(env);
      const w2 = await startWorker(env);
      workers.push(w1.proc, w2.proc);
      await writeFile(slow, '');
      const merges = crs.map((cr) => c.post(`${base}/${cr.number}/merge`, {}));
      await until(async () => (await readdir(marks)).length >= N, `${N} pushes in flight (a signal the git hook leaves on disk)`, { timeoutMs: 60_000 });

      killGroup(w1.proc);
      killGroup(w2.proc);
      const killedAt = Date.now();
      await rm(slow);
      const w3 = await startWorker(env);
      workers.push(w3.proc);
      // Timed from the fresh worker's readiness: what is under test is how soon a live worker
      // takes the dead ones' jobs over (without the claims they would wait out pg-boss's
      // 300 s expiry), not how long a node process takes to boot on a loaded machine.
      const readyAt = Date.now();
      const results = await Promise.all(merges);
      const elapsed = Date.now() - readyAt;
      console.log(`      ${N} orphaned merges finished ${Date.now() - killedAt} ms after both workers died, ${elapsed} ms after the fresh worker was ready`);
      expect(results.map((r) => r.status), JSON.stringify(results.map((r) => r.body))).to.deep.equal(Array(N).fill(200));
      expect(elapsed).to.be.at.most(10_000);

      repo.git('fetch', '-q', 'origin');
      for (let i = 0; i < N; i++) {
        const cr = (await c.get(`${base}/${crs[i].number}`)).body.change_request;
        expect(cr.status).to.equal('merged');
        expect(cr.merge_commit_sha).to.equal(repo.tip(`base-${i}`));
        expect(repo.git('rev-parse', `${cr.merge_commit_sha}^2`)).to.equal(heads[i]);
        expect(repo.git('rev-list', '--count', `origin/base-${i}`, `^origin/main`)).to.equal('3'); // the base commit, the topic commit and one merge
        expect(await eventTypes(t.db, cr.cr_id)).to.deep.equal(['ChangeRequestOpened', 'ChangeRequestMerged']);
      }
      killGroup(w3.proc);
    } finally {
      await rm(slow, { force: true });
      await http.close();
      await api.stop();
    }
  });
});
