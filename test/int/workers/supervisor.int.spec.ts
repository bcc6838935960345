import { expect } from 'chai';
import { silentLogger } from '../../../lib/logger.js';
import { backoffMs, createWorkerMetrics, supervise, type RunningJob } from '../../../workers/supervisor.js';
import { exponential, jittered } from '../../../lib/backoff.js';
import { createTestDb, type TestDb } from '../../support/db.js';
import { until } from '../../support/wait.js';
import { startTestServer } from '../../support/server.js';

/**
 * The periodic jobs' one loop (workers/supervisor.ts): passes never overlap, a failure
 * backs off and a success comes back to the interval, stop waits for the pass in flight and
 * starts none after it, and where only one process may run a job, only one does (a
 * second supervisor stands for a second server process: its own leader lock, the same
 * database).
 */
describe('workers: the supervisor of periodic jobs', function () {
  this.timeout(30_000);
  let t: TestDb;
  const jobs: RunningJob[] = [];
  before(async () => {
    t = await createTestDb();
  });
  afterEach(async () => {
    for (const j of jobs.splice(0)) await j.stop();
  });
  after(async () => {
    await t?.drop();
  });

  it('jitter stays within ± the fraction; backoff doubles per failure up to its cap', () => {
    expect(jittered(1000, 0.1, () => 0)).to.equal(900);
    expect(jittered(1000, 0.1, () => 1)).to.equal(1100);
    expect(jittered(1000, 0, Math.random)).to.equal(1000);
    expect([0, 1, 2, 3, 4, 10].map((n) => backoffMs(100, n, 800))).to.deep.equal([100, 200, 400, 800, 800, 800]);
    expect(backoffMs(1000, 3, 10), 'the cap is never below the interval').to.equal(1000);
    // Every other retry in the server uses the same two functions.
    expect([0, 1, 2, 5, 6, 40].map((n) => exponential(10, n, 250))).to.deep.equal([10, 20, 40, 250, 250, 250]);
    expect(jittered(10, 0.5, () => 0)).to.equal(5);
    expect(jittered(10, 0.5, () => 1)).to.equal(15);
    expect(jittered(25, 1, () => 0), 'full jitter from 0').to.equal(0);
    expect(jittered(25, 1, () => 1), 'to twice the base').to.equal(50);
  });

  it('passes never overlap; a failure is counted and the next pass still runs; stop ends the loop', async () => {
    const metrics = createWorkerMetrics();
    let active = 0;
    let maxActive = 0;
    let n = 0;
    const job = supervise(
      {
        name: 'test-overlap',
        everyMs: 5,
        pass: async () => {
          n++;
          active++;
          maxActive = Math.max(maxActive, active);
          await new Promise((r) => setImmediate(r));
          active--;
          if (n === 2) throw new Error('second pass fails');
        },
      },
      { logger: silentLogger, metrics },
    );
    jobs.push(job);
    await Promise.all([job.tick(), job.tick(), job.tick()]);
    await until(() => n >= 5, 'five passes');
    await job.stop();
    const after = n;
    expect(maxActive, 'one pass at a time').to.equal(1);
    const text = await metrics.registry.metrics();
    expect(text).to.match(/svc_worker_passes_total\{job="test-overlap",outcome="failed"\} 1\b/);
    expect(text).to.match(/svc_worker_passes_total\{job="test-overlap",outcome="ok"\} [4-9]/);
    await job.tick();
    expect(n, 'no pass after stop, even asked for').to.equal(after);
  });

  it('perPass leader: two processes never run a pass at the same time', async () => {
    let inside = 0;
    let overlapped = false;
    let passes = 0;
    const pass = async () => {
      inside++;
      if (inside > 1) overlapped = true;
      passes++;
      await new Promise((r) => setTimeout(r, 20));
      inside--;
    };
    const a = supervise({ name: 'test-per-pass', everyMs: 1, jitter: 0, leader: { key: 'test:per-pass', mode: 'perPass' }, pass }, { db: t.db, logger: silentLogger });
    const b = supervise({ name: 'test-per-pass', everyMs: 1, jitter: 0, leader: { key: 'test:per-pass', mode: 'perPass' }, pass }, { db: t.db, logger: silentLogger });
    jobs.push(a, b);
    await until(() => passes >= 10, 'ten passes between the two');
    expect(overlapped).to.equal(false);
  });

  it('held leader: one process leads; when it stops, the other takes over', async () => {
    const ran = { a: 0, b: 0 };
    const metrics = createWorkerMetrics();
    const start = (who: 'a' | 'b') =>
      supervise({ name: `test-held-${who}`, everyMs: 5, leader: { key: 'test:held', mode: 'held' }, pass: async () => void ran[who]++ }, { db: t.db, logger: silentLogger, metrics });
    const a = start('a');
    await until(() => ran.a >= 2, 'a leads');
    const b = start('b');
    jobs.push(b);
    await until(async () => /svc_worker_passes_total\{job="test-held-b",outcome="follower"\} [3-9]/.test(await metrics.registry.metrics()), 'b stands by');
    expect(ran.b, 'a follower runs no pass').to.equal(0);
    await a.stop();
    await until(() => ran.b >= 2, 'b took over');
  });

  it("a server's jobs run on it: their passes are on /metrics beside the API's", async () => {
    const token = 'm'.repeat(40);
    const srv = await startTestServer({ env: { SVC_SCHEDULER: '1', SVC_SCHEDULER_INTERVAL_MS: '50', SVC_METRICS_TOKEN: token } });
    try {
      // The public listener serves them to the metrics token only.
      const metrics = async () => (await fetch(`${srv.url}/metrics`, { headers: { authorization: `Bearer ${token}` } })).text();
      await until(async () => {
        const text = await metrics();
        return /svc_worker_passes_total\{job="sandbox-pool-keeper",outcome="ok"\} [1-9]/.test(text) && /svc_worker_passes_total\{job="trigger-scheduler",outcome="ok"\} [1-9]/.test(text);
      }, 'the pool keeper and the trigger scheduler passed');
      expect(await metrics()).to.match(/svc_http_request_duration_seconds/);
    } finally {
      await srv.stop();
    }
  });
});
