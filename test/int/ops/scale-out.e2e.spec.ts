import { expect } from 'chai';
import { execFile } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { WebSocket } from 'ws';
import { bootstrapUser } from '../../../services/accounts/service.js';
import { projectRoot } from '../../../lib/paths.js';
import { createTestDb, type TestDb } from '../../support/db.js';
import { fixtureRepo, type FixtureRepo } from '../../support/repo.js';
import { client } from '../../support/http.js';
import { spawnTestServer, traversableTempDir, type SpawnedServer } from '../../support/server.js';
import { until } from '../../support/wait.js';

const run = promisify(execFile);

interface FeedEvent {
  global_position: number;
  stream_id: string;
  type: string;
}

/** A feed socket collecting every message; `until` waits for a condition on what arrived. */
function collectFeed(url: string, project: string, token: string) {
  const ws = new WebSocket(`${url.replace(/^http/, 'ws')}/v1/projects/${project}/events`, { headers: { authorization: `Bearer ${token}` } });
  const events: FeedEvent[] = [];
  const waiters: (() => void)[] = [];
  ws.on('message', (raw) => {
    events.push(JSON.parse(raw.toString()) as FeedEvent);
    waiters.splice(0).forEach((w) => w());
  });
  const opened = new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  return {
    ws,
    events,
    opened,
    async until(cond: () => boolean, timeoutMs: number, what: string) {
      const deadline = Date.now() + timeoutMs;
      while (!cond()) {
        const left = deadline - Date.now();
        if (left <= 0) throw new Error(`feed on ${url}: ${what} (have ${events.length} events)`);
        await new Promise<void>((r) => {
          waiters.push(r);
          setTimeout(r, Math.min(left, 500));
        });
      }
    },
  };
}

/**
 * Scale-out, for real: one PostgreSQL (the run's embedded cluster, a fresh database), two
 * `svc-server api` and two `svc-server worker` processes on one DATABASE_URL, each with its
 * own data dir (mirrors are caches). CRs are created and 20 merged concurrently into one
 * base through both APIs; one worker is SIGKILLed in the middle of a merge (after the base
 * moved, before the merge was recorded: the worst moment).
 */
describe('scale-out: 2 api + 2 worker processes on one database', function () {
  this.timeout(240_000);
  const N = 20;
  let t: TestDb;
  let repo: FixtureRepo;
  const dirs: string[] = [];
  const procs: SpawnedServer[] = [];
  let closeHook = async () => {};

  before(async () => {
    t = await createTestDb();
    repo = await fixtureRepo();
  });
  after(async () => {
    await Promise.all(procs.map((p) => p.stop()));
    await closeHook();
    await t.drop();
    await repo.cleanup();
    await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
  });

  it('records every merge once, the base holds exactly the merged commits, numbers are gapless, projections verify, both feeds see every event', async () => {
    const env = { DATABASE_URL: t.url, SVC_SECRET_KEY: randomBytes(32).toString('base64'), LOG_LEVEL: 'warn', SVC_CHANNELS_ALLOW_HTTP: '1' };
    // A chat webhook: the channels subscriber runs in both workers, one delivering at a time.
    const posted: string[] = [];
    const hook = http.createServer((req, res) => {
      posted.push(String(req.headers['x-svc-event-id']));
      req.resume().on('end', () => res.end('ok'));
    });
    await new Promise<void>((r) => hook.listen(0, '127.0.0.1', () => r()));
    closeHook = () => new Promise<void>((r) => hook.close(() => r()));
    const start = async (role: 'api' | 'worker', extra: Record<string, string> = {}) => {
      const dataDir = await traversableTempDir(`svc-scale-${role}-`);
      dirs.push(dataDir);
      const p = await spawnTestServer({ ...env, SVC_DATA_DIR: dataDir, ...extra }, role);
      procs.push(p);
      return p;
    };
    const [api1, api2, doomed, survivor] = await Promise.all([
      start('api'),
      start('api'),
      // Kills itself (SIGKILL) after publishing its first merge and before recording it.
      start('worker', { SVC_FAILPOINTS: 'merge.after-publish' }),
      start('worker'),
    ]);
    const { token } = (await bootstrapUser(t.db, { email: 'scale@example.test' })).token;
    const apis = [client(api1.url, token), client(api2.url, token)];

    const initial = repo.tip('main')!;
    const branches = Array.from({ length: N }, (_, i) => `scale-${i}`);
    for (const [i, b] of branches.entries()) await repo.commit(b, { [`scale/${i}.txt`]: `${i}\n` }, { from: 'main' });

    const created = await apis[0]!.post('/v1/projects', { name: 'Scale', slug: 'scale', repo_url: repo.url });
    expect(created.status, JSON.stringify(created.body)).to.equal(201);
    const projectId = created.body.project.project_id as string;
    const feeds = [collectFeed(api1.url, projectId, token), collectFeed(api2.url, projectId, token)];
    await Promise.all(feeds.map((f) => f.opened));
    const base = `/v1/projects/scale/change-requests`;
    const hookUrl = `http://127.0.0.1:${(hook.address() as AddressInfo).port}/hook`;
    expect((await apis[1]!.post('/v1/projects/scale/channels', { kind: 'slack', webhook_url: hookUrl })).status).to.equal(201);

    // Creates through both APIs at once.
    const opened = await Promise.all(branches.map((b, i) => apis[i % 2]!.post(base, { title: b, head_ref: b })));
    expect(opened.map((r) => r.status)).to.deep.equal(branches.map(() => 201));
    const crs = opened.map((r) => r.body.change_request);
    expect(crs.map((c) => c.number).sort((a, b) => a - b), 'numbers gapless').to.deep.equal(branches.map((_, i) => i + 1));

    // 20 concurrent merges into main through both APIs, with a worker dying mid-merge.
    const t0 = Date.now();
    const merges = await Promise.all(crs.map((cr, i) => apis[(i + 1) % 2]!.post(`${base}/${cr.number}/merge`, {})));
    const mergeMs = Date.now() - t0;
    expect(
      merges.map((r) => r.status),
      JSON.stringify(merges.filter((r) => r.status !== 200).map((r) => r.body)),
    ).to.deep.equal(crs.map(() => 200));
    expect(doomed.proc.signalCode, `the failpoint worker took a merge and died:\n${doomed.output()}`).to.equal('SIGKILL');
    expect(survivor.proc.exitCode).to.equal(null);
    expect(survivor.output()).to.contain('re-queued a job a dead worker held');

    // Every merge recorded exactly once; nothing left half-done.
    const mergedEvents = await t.db.rows<{ stream_id: string; n: number }>({
      text: `SELECT stream_id, count(*)::int AS n FROM events WHERE project_id = $1 AND type = 'ChangeRequestMerged' GROUP BY stream_id`,
      values: [projectId],
    });
    expect(mergedEvents.length).to.equal(N);
    expect(mergedEvents.every((r) => r.n === 1)).to.equal(true);
    expect((await t.db.rows({ text: 'SELECT * FROM merge_attempts', values: [] })).length, 'no merge attempt left').to.equal(0);
    // Merge jobs only: a merge into the default branch also queues a manifest sync, which may still run.
    expect((await t.db.rows({ text: "SELECT * FROM job_claims WHERE queue = 'cr.merge'", values: [] })).length, 'no merge job claim left').to.equal(0);

    // The base holds exactly the merged commits: each CR's head commit, plus its merge commit.
    const final = await Promise.all(crs.map((cr) => apis[0]!.get(`${base}/${cr.number}`)));
    const states = final.map((r) => r.body.change_request);
    expect(states.every((s) => s.status === 'merged')).to.equal(true);
    const expected = new Set<string>();
    for (const [i, s] of states.entries()) {
      expect(s.head_commit_sha).to.equal(crs[i].head_commit_sha);
      expected.add(s.head_commit_sha);
      expected.add(s.merge_commit_sha);
    }
    repo.git('fetch', '-q', 'origin');
    const inBase = new Set(execLines(repo, 'rev-list', `${initial}..${repo.tip('main')}`));
    expect([...inBase].sort()).to.deep.equal([...expected].sort());

    // Projections replayed from the log equal the live tables.
    const verify = await run(process.execPath, [path.join(projectRoot, 'dist/ops/svc-server.js'), 'projections', 'rebuild', '--verify'], {
      env: { ...process.env, ...env, LOG_LEVEL: 'warn' },
    });
    expect(verify.stdout).to.match(/^verified change_requests: \d+ rows/);

    // The event feed on either API delivers every event of the project, once, in the log's order.
    const logged = (
      await t.db.rows<{ global_position: number }>({
        text: 'SELECT global_position FROM events WHERE project_id = $1 ORDER BY global_position',
        values: [projectId],
      })
    ).map((r) => Number(r.global_position));
    // Opened + merged per CR; merges into main also record manifest syncs, which the feed carries too.
    const crEvents = await t.db.rows({ text: "SELECT 1 FROM events WHERE project_id = $1 AND type LIKE 'ChangeRequest%'", values: [projectId] });
    expect(crEvents.length).to.equal(2 * N);
    for (const f of feeds) {
      await f.until(() => f.events.length >= logged.length, 20_000, `expected ${logged.length} events`);
      expect(f.events.map((e) => e.global_position).sort((a, b) => a - b)).to.deep.equal(logged);
      f.ws.close();
    }
    // Chat: every CR opened and merged event posted, from whichever worker led.
    const eventIds = (
      await t.db.rows<{ event_id: string }>({ text: `SELECT event_id FROM events WHERE project_id = $1 AND type LIKE 'ChangeRequest%'`, values: [projectId] })
    ).map((r) => r.event_id);
    await until(() => new Set(posted).size >= eventIds.length, 'every CR event posted to chat', { timeoutMs: 30_000, maxIntervalMs: 100 }).catch(() => undefined);
    expect([...new Set(posted)].sort()).to.deep.equal([...eventIds].sort());
    console.log(`      chat posts: ${posted.length} for ${eventIds.length} events (at-least-once; ${posted.length - new Set(posted).size} repeated)`);
    console.log(`      20 concurrent merges through 2 APIs / 2 workers, one SIGKILLed mid-merge: ${mergeMs} ms`);
  });
});

function execLines(repo: FixtureRepo, ...args: string[]): string[] {
  return repo.git(...args).split('\n').filter(Boolean);
}
