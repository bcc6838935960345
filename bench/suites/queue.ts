/**
 * `npm run bench -- queue`: 20 CRs through the merge queue with a 5-second check,
 * SVC_CHECKS_CONCURRENCY=4 and `max_batch = 4`, on one server (API and worker), the process
 * sandbox provider, a file:// repository:
 * - the drain: from the first CR queued to the last one merged; goal at most 1.3x the floor;
 * - the floor, measured in the same run: ceil(20/4) times the check's own run (the same
 *   script, spawned directly, no server): what 4-at-a-time checking cannot beat;
 * - from the last check of a landing passing to the compare-and-swap (the landing recorded,
 *   the swap follows at once), p50; goal <= 100 ms; and to its first `ChangeRequestMerged`
 *   (recorded after the swap), p50.
 * `--quick`: 8 CRs with a 2-second check.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../infra/config.js';
import { silentLogger } from '../../lib/logger.js';
import { bootstrapUser } from '../../services/accounts/service.js';
import { startServer } from '../../ops/server.js';
import { median, percentile, type BenchRow, type BenchSuite } from '../types.js';
import { startBenchPostgres } from '../support/pg.js';

const CONCURRENCY = 4;

export const run: BenchSuite = async ({ quick }) => {
  const crs = quick ? 8 : 20;
  const checkS = quick ? 2 : 5;
  const script = `sleep ${checkS}\n`;
  const pg = await startBenchPostgres('svc-bench-queue-');
  const root = await mkdtemp(path.join(os.tmpdir(), 'svc-bench-queue-'));
  let stop: (() => Promise<void>) | undefined;
  try {
    // The floor: the check itself, as the sandbox runs it, ceil(crs/4) times in a row.
    const t0 = performance.now();
    spawnSync('/bin/sh', ['-c', script], { stdio: 'ignore' });
    const oneCheck = performance.now() - t0;
    const floor = Math.ceil(crs / CONCURRENCY) * oneCheck;

    const env = { ...process.env, GIT_AUTHOR_NAME: 'b', GIT_AUTHOR_EMAIL: 'b@x', GIT_COMMITTER_NAME: 'b', GIT_COMMITTER_EMAIL: 'b@x', GIT_CONFIG_GLOBAL: '/dev/null' };
    const bare = path.join(root, 'remote.git');
    const work = path.join(root, 'work');
    const git = (cwd: string, ...args: string[]) => execFileSync('git', args, { cwd, env, encoding: 'utf8' }).trim();
    git(root, 'init', '-q', '--bare', '-b', 'main', bare);
    git(root, 'init', '-q', '-b', 'main', work);
    execFileSync('sh', ['-c', `printf '%s' "$1" > check.sh && printf '[[checks]]\\nname = "test"\\nrun = "sh check.sh"\\n\\n[merge_queue]\\nenabled = true\\nmax_batch = ${CONCURRENCY}\\n' > svc.toml`, 'sh', script], { cwd: work });
    git(work, 'add', '-A');
    git(work, 'commit', '-q', '-m', 'base');
    git(work, 'push', '-q', bare, 'main');
    const base0 = git(work, 'rev-parse', 'HEAD');
    for (let i = 0; i < crs; i++) {
      git(work, 'checkout', '-q', '-b', `cr-${i}`, 'main');
      execFileSync('sh', ['-c', `echo ${i} > file-${i}.txt`], { cwd: work });
      git(work, 'add', '-A');
      git(work, 'commit', '-q', '-m', `cr ${i}`);
      git(work, 'push', '-q', bare, `cr-${i}`);
    }

    const { db, url } = await pg.database('queue', { max: 20 });
    const config = loadConfig({
      PORT: '0', HOST: '127.0.0.1', SVC_DATA_DIR: path.join(root, 'data'), LOG_LEVEL: 'silent', SVC_ALLOW_FILE_REPOS: '1',
      SVC_SANDBOX_PROVIDER: 'process', SVC_ALLOW_UNISOLATED: '1', SVC_CHECKS_CONCURRENCY: String(CONCURRENCY), SVC_SCHEDULER: '0', SVC_METRICS_ADDR: 'off',
    });
    const server = await startServer({ config, logger: silentLogger, roles: { api: true, worker: true }, database: { db, url, embedded: false, close: async () => {} } });
    stop = () => server.stop();
    const user = await bootstrapUser(db, { email: 'bench@example.test' });
    const auth = { authorization: `Bearer ${user.token.token}`, 'content-type': 'application/json' };
    const api = async (method: string, p: string, body?: unknown) => {
      const r = await fetch(`${server.url}/v1${p}`, { method, headers: auth, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
      return { status: r.status, body: (await r.json()) as any };
    };
    const project = (await api('POST', '/projects', { name: 'bench', slug: 'bench', repo_url: `file://${bare}` })).body.project;
    const P = `/projects/${project.project_id}`;
    for (let i = 0; ; i++) {
      if ((await api('GET', `${P}/manifest`)).body.source_sha === base0) break;
      if (i > 500) throw new Error('the manifest never came into force');
      await new Promise((r) => setTimeout(r, 20));
    }
    const opened: { number: number; head: string }[] = [];
    for (let i = 0; i < crs; i++) {
      const cr = (await api('POST', `${P}/change-requests`, { title: `CR ${i}`, head_ref: `cr-${i}` })).body.change_request;
      opened.push({ number: cr.number, head: cr.head_commit_sha });
    }
    const started = performance.now();
    for (const c of opened) {
      const r = await api('POST', `${P}/change-requests/${c.number}/merge`, { when: 'checks_pass', expected_head_sha: c.head });
      if (r.status !== 202) throw new Error(`not queued: ${JSON.stringify(r.body)}`);
    }
    for (let i = 0; ; i++) {
      const q = (await api('GET', `${P}/merge-queue`)).body.merge_queue;
      if (q.landed >= crs) break;
      if (performance.now() - started > 600_000) throw new Error(`the queue did not drain: ${JSON.stringify(q)}`);
      await new Promise((r) => setTimeout(r, 25));
    }
    const drain = performance.now() - started;

    // From the last check of each landing passing to its first merge record (after the swap).
    const rows = await db.rows<{ landing: Date; passed: Date | null; merged: Date | null }>({
      text: `WITH l AS (
          SELECT e.recorded_at AS landing, e.global_position AS pos, (e.data->>'merge_sha') AS sha FROM events e
          WHERE e.stream_id = $1 AND e.type = 'MergeQueueLanding')
        SELECT l.landing,
          (SELECT max(p.recorded_at) FROM events p WHERE p.type = 'CheckPassed' AND p.project_id = $2 AND p.global_position < l.pos) AS passed,
          (SELECT min(m.recorded_at) FROM events m WHERE m.type = 'ChangeRequestMerged' AND m.project_id = $2 AND m.global_position > l.pos) AS merged
        FROM l ORDER BY l.pos`,
      values: [`mq-${project.project_id}:main`, project.project_id],
    });
    const gaps = rows.filter((r) => r.passed).map((r) => new Date(r.landing).getTime() - new Date(r.passed!).getTime());
    const recorded = rows.filter((r) => r.passed && r.merged).map((r) => new Date(r.merged!).getTime() - new Date(r.passed!).getTime());
    // Where a wave's time goes: a queue run's wait for a slot, and its run (sandbox, export, the check, the poll).
    const runs = await db.rows<{ queued: Date; started: Date; passed: Date }>({
      text: `SELECT q.recorded_at AS queued, s.recorded_at AS started, p.recorded_at AS passed FROM events q
        JOIN events s ON s.type = 'CheckStarted' AND s.data->>'run_id' = q.data->>'run_id'
        JOIN events p ON p.type = 'CheckPassed' AND p.data->>'run_id' = q.data->>'run_id'
        WHERE q.type = 'CheckQueued' AND q.data->>'via' = 'queue' AND q.project_id = $1`,
      values: [project.project_id],
    });
    const ms = (a: Date, b: Date) => new Date(b).getTime() - new Date(a).getTime();
    if (process.env.BENCH_QUEUE_TRACE) {
      const t = await db.rows<{ type: string; at: Date; stream_id: string; data: any }>({ text: `SELECT type, recorded_at AS at, stream_id, data FROM events WHERE project_id = $1 AND type IN ('ChangeRequestQueued','CheckStarted','CheckPassed','MergeQueueEntryBuilt','MergeQueueLanding','CheckCancelled') ORDER BY global_position`, values: [project.project_id] });
      const t0 = new Date(t[0]!.at).getTime();
      for (const e of t) process.stderr.write(`${String(new Date(e.at).getTime() - t0).padStart(6)} ${e.type} ${e.stream_id.slice(0, 12)} ${e.type === 'MergeQueueLanding' ? e.data.count : ''}\n`);
    }
    const goalDrain = 1.3;
    const runnerFloor = Math.ceil(crs / CONCURRENCY) * median(runs.map((r) => ms(r.started, r.passed)));
    const out: BenchRow[] = [
      { suite: 'queue', name: `drain ${crs} CRs, ${checkS} s check, ${CONCURRENCY} at once`, value: drain / 1000, unit: 's', floor: floor / 1000, ratio: drain / floor, goal: `<= ${goalDrain}x floor`, met: drain <= goalDrain * floor },
      {
        suite: 'queue', name: 'drain vs the runner: ceil(n/4) x a check run as svc runs it (median)', value: drain / 1000, unit: 's', floor: runnerFloor / 1000, ratio: drain / runnerFloor, goal: `<= ${goalDrain}x floor`, met: drain <= goalDrain * runnerFloor,
        notes: 'a run: its sandbox, the tree exported, the check, the poll for its end (the check runner, not the queue)',
      },
      { suite: 'queue', name: 'last check passed -> compare-and-swap, p50', value: median(gaps), unit: 'ms', goal: '<= 100 ms', met: median(gaps) <= 100, notes: `p90 ${percentile(gaps, 90).toFixed(0)} ms over ${gaps.length} landings` },
      { suite: 'queue', name: 'last check passed -> first merge recorded, p50', value: median(recorded), unit: 'ms' },
      { suite: 'queue', name: 'queue run: queued -> started, p50', value: median(runs.map((r) => ms(r.queued, r.started))), unit: 'ms', notes: `${runs.length} runs` },
      { suite: 'queue', name: 'queue run: started -> passed, p50', value: median(runs.map((r) => ms(r.started, r.passed))), unit: 'ms', notes: `the check itself: ${oneCheck.toFixed(0)} ms` },
    ];
    return out;
  } finally {
    await stop?.();
    await pg.stop();
    await rm(root, { recursive: true, force: true });
  }
};
