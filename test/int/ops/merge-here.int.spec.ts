import { expect } from 'chai';
import { rm } from 'node:fs/promises';
import { bootstrapUser } from '../../../infra/accounts.js';
import { createTestDb, type TestDb } from '../../support/db.js';
import { fixtureRepo, type FixtureRepo } from '../../support/repo.js';
import { client } from '../../support/http.js';
import { spawnTestServer, traversableTempDir, withProject } from '../../support/server.js';

/**
 * A merge requested from a process that works the merge queue runs in that process
 * (`Queue.run`: the job row and its claim committed together, no fetch, no NOTIFY hop).
 * It is still a durable job: recorded once, and finished by the next server when this one
 * dies at any step.
 */
const eventTypes = async (db: TestDb['db'], crId: string) =>
  (await db.rows<{ type: string }>({ text: 'SELECT type FROM events WHERE stream_id = $1 ORDER BY stream_position', values: [`cr-${crId}`] })).map((r) => r.type);

const mergeJobs = (db: TestDb['db'], crId: string) =>
  db.rows<{ state: string; retry_count: number; output: { ok: boolean } | null }>({
    text: `SELECT state, retry_count, output FROM pgboss.job WHERE name = 'cr.merge' AND data->>'cr_id' = $1`,
    values: [crId],
  });

/** Polls a condition the server makes true (not a clock); fails after `ms`. */
async function until(cond: () => Promise<boolean>, what: string, ms = 30_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

describe('merges run in the process that took the request', function () {
  this.timeout(120_000);

  it('one durable job, completed once, its claim and attempt gone; a merge of the same CR at the same time merges once', () =>
    withProject({ slug: 'here' }, async ({ srv, repo, api, base }) => {
      await repo.commit('main', { 'main.txt': 'moved\n' });
      const head = await repo.commit('topic', { 'topic.txt': 'work\n' }, { from: 'main~1' });
      const cr = (await api.post(base, { title: 'Here', head_ref: 'topic' })).body.change_request;
      const results = await Promise.all(Array.from({ length: 6 }, () => api.post(`${base}/${cr.number}/merge`, {})));
      const statuses = results.map((r) => r.status).sort();
      expect(statuses).to.deep.equal([200, 409, 409, 409, 409, 409]);
      const merged = results.find((r) => r.status === 200)!.body.change_request;
      expect(merged.status).to.equal('merged');
      expect(repo.tip('main')).to.equal(merged.merge_commit_sha);
      repo.git('fetch', '-q', 'origin');
      expect(repo.git('rev-parse', `${merged.merge_commit_sha}^2`)).to.equal(head);
      expect(await eventTypes(srv.db.db, cr.cr_id)).to.deep.equal(['ChangeRequestOpened', 'ChangeRequestMerged']);
      // The answer comes before the job's result is stored; it is stored all the same.
      await until(async () => (await mergeJobs(srv.db.db, cr.cr_id)).every((j) => j.state === 'completed'), 'the jobs completed');
      const jobs = await mergeJobs(srv.db.db, cr.cr_id);
      expect(jobs).to.have.length(6);
      expect(jobs.filter((j) => j.output?.ok === true)).to.have.length(1);
      expect(jobs.every((j) => j.retry_count === 0)).to.equal(true);
      await until(async () => (await srv.db.db.rows({ text: 'SELECT job_id FROM job_claims', values: [] })).length === 0, 'claims released');
      expect(await srv.db.db.rows({ text: 'SELECT cr_id FROM merge_attempts', values: [] })).to.deep.equal([]);
    }));

  describe('killed (SIGKILL) at a step of a merge it runs itself', () => {
    let t: TestDb;
    let repo: FixtureRepo;
    let dataDir: string;
    before(async () => {
      t = await createTestDb();
      repo = await fixtureRepo();
      dataDir = await traversableTempDir('svc-merge-here-');
    });
    after(async () => {
      await t.drop();
      await repo.cleanup();
      await rm(dataDir, { recursive: true, force: true });
    });

    // After the claim: nothing ran, the job is this dead process's. After the ref moved: published, not recorded.
    for (const point of ['queue.run-here.after-claim', 'git.push.after-remote-moved']) {
      it(`${point}: the restarted server merges it exactly once, with no retry by the client`, async () => {
        const env = { DATABASE_URL: t.url, SVC_DATA_DIR: dataDir, LOG_LEVEL: 'warn' };
        const { token } = (await bootstrapUser(t.db, { email: `${point}@example.test` })).token;
        const slug = point.replace(/[^a-z]+/g, '-').replace(/-$/, '');
        const branch = `kill-${slug}`;
        await repo.commit('main', { [`main-${slug}.txt`]: 'moved\n' });
        const head = await repo.commit(branch, { [`${slug}.txt`]: 'work\n' }, { from: 'main~1' });
        const mainBefore = repo.tip('main');

        const first = await spawnTestServer({ ...env, SVC_FAILPOINTS: point });
        const api1 = client(first.url, token);
        expect((await api1.post('/v1/projects', { name: slug, slug, repo_url: repo.url })).status).to.equal(201);
        const base = `/v1/projects/${slug}/change-requests`;
        const cr = (await api1.post(base, { title: 'Kill me', head_ref: branch })).body.change_request;
        const answer = await api1.post(`${base}/${cr.number}/merge`, {}).then(
          (r) => r.status,
          () => 'connection lost',
        );
        expect(answer).to.equal('connection lost');
        await first.stop();
        expect(first.proc.signalCode).to.equal('SIGKILL');
        expect(await eventTypes(t.db, cr.cr_id)).to.deep.equal(['ChangeRequestOpened']);
        if (point === 'queue.run-here.after-claim') expect(repo.tip('main'), 'nothing published yet').to.equal(mainBefore);

        const second = await spawnTestServer(env);
        try {
          // The dead process's claim is taken back and the job runs again (or the start-up
          // reconcile records the published merge): no request needed.
          await until(async () => (await eventTypes(t.db, cr.cr_id)).includes('ChangeRequestMerged'), 'the merge recorded');
          const api2 = client(second.url, token);
          const after = (await api2.get(`${base}/${cr.number}`)).body.change_request;
          expect(after.status).to.equal('merged');
          expect(after.merge_commit_sha).to.equal(repo.tip('main'));
          expect(await eventTypes(t.db, cr.cr_id)).to.deep.equal(['ChangeRequestOpened', 'ChangeRequestMerged']);
          repo.git('fetch', '-q', 'origin');
          expect(repo.git('rev-parse', `${after.merge_commit_sha}^1`), 'one merge on top of the old base').to.equal(mainBefore);
          expect(repo.git('rev-parse', `${after.merge_commit_sha}^2`)).to.equal(head);
          expect((await api2.post(`${base}/${cr.number}/merge`, {})).status).to.equal(409);
          await until(async () => (await mergeJobs(t.db, cr.cr_id)).every((j) => j.state === 'completed'), 'the job settled');
        } finally {
          expect(await second.stop()).to.equal(0);
        }
      });
    }
  });
});
