/**
 * `npm run bench -- insights`: the insights read (docs/insights.md) on a real Postgres (an
 * embedded cluster of its own, removed at the end).
 *
 * - the query: one project with >= 100k CR events (real histories: opened, refreshed,
 *   edited, closed, reopened, a fifth merged) from 400 sessions over 3 agents, 4 models
 *   and 2 triggers, and 10k priced model calls; `insightsOf` (what the API, the CLI and the
 *   dashboard read: the catch-up check and both aggregates) per model, per week and in
 *   total. Floor: counting that project's events by type straight from the log, in the
 *   same run. Goal: <= 100 ms p50.
 * - the catch-up over that log from nothing (events/s), for scale.
 * - appends with and without the projection: 16 writers appending real CR events one per
 *   transaction, alone, then with a reader catching the projection up once a second
 *   (what a dashboard or `svc insights` being read costs; the projection adds nothing to
 *   the append itself). Rounds interleaved, the projection caught up (untimed) before each
 *   round with the reader, so it pays for its own appends; ratio = median of per-round
 *   ratios. Goal: >= 0.95x.
 */
import { randomUUID } from 'node:crypto';
import type { Db } from '../../infra/db/db.js';
import { append } from '../../infra/event-store.js';
import { STREAM_TYPE, streamIdOf } from '../../domain/change-request/index.js';
import { SESSION_STREAM_TYPE, sessionStreamId } from '../../domain/session/index.js';
import { catchUpInsights } from '../../projections/insights.js';
import { insightsOf } from '../../services/insights/service.js';
import type { GroupBy } from '../../sql/queries/insights.js';
import { median, percentile, timeRuns, type BenchRow, type BenchSuite } from '../types.js';
import { startBenchPostgres } from '../support/pg.js';
import { crHistory, insertProjects, type BenchProject } from '../support/cr-events.js';

const WRITERS = 16;
const AGENTS = ['opencode', 'claude', 'codex'];
const MODELS = ['model-a', 'model-b', 'model-c', 'model-d'];
const seconds = (t: bigint) => Number(process.hrtime.bigint() - t) / 1e9;

/** `sessions` sessions, then CR histories from them until the project holds `events` CR events; returns how many. */
async function seed(db: Db, p: BenchProject, sessions: number, events: number, calls: number): Promise<{ crEvents: number; sessionIds: string[] }> {
  const sessionIds = Array.from({ length: sessions }, () => randomUUID());
  await db.transaction(async (tx) => {
    for (const [i, id] of sessionIds.entries()) {
      await append(tx, {
        streamId: sessionStreamId(id),
        streamType: SESSION_STREAM_TYPE,
        projectId: p.projectId,
        expectedVersion: 0,
        events: [
          { type: 'SessionCreated', data: { session_id: id, account_id: p.accountId, project_id: p.projectId, base_ref: 'main', agent: AGENTS[i % AGENTS.length], model: MODELS[i % MODELS.length], prompt: null, trigger: i % 5 === 0 ? 'nightly' : i % 7 === 0 ? 'weekly' : null, created_by: p.userId, created_at: new Date(Date.UTC(2026, 0, 1) + i * 60_000).toISOString() } },
          ...(i % 3 === 0 ? [{ type: 'SessionStopped', data: { reason: 'user', by: p.userId, at: new Date(Date.UTC(2026, 0, 1) + i * 60_000 + 3_600_000).toISOString() } }] : []),
        ],
        metadata: { actor: p.userId },
      });
    }
  });
  let crEvents = 0;
  let n = 0;
  while (crEvents < events) {
    await db.transaction(async (tx) => {
      for (let k = 0; k < 250 && crEvents < events; k++) {
        n++;
        const h = crHistory(p, n, 20 - (n % 3), Date.UTC(2026, 0, 1) + n * 60_000, { merged: n % 5 === 0 });
        const opened = h.events[0]!;
        if (opened.type === 'ChangeRequestOpened') opened.data.origin_session_id = sessionIds[n % sessionIds.length]!;
        crEvents += h.events.length;
        await append(tx, { streamId: streamIdOf(h.crId), streamType: STREAM_TYPE, projectId: p.projectId, expectedVersion: 0, events: h.events, metadata: { actor: p.userId } });
      }
    });
  }
  // Model calls over the last 30 days, priced (one model unpriced), as the gateway writes them.
  await db.run({
    text: `INSERT INTO llm_usage (account_id, project_id, session_id, sandbox_id, model, input_tokens, output_tokens, status, input_price_per_mtok, output_price_per_mtok, currency, created_at)
      SELECT $1, $2, ($3::text[])[1 + i % array_length($3::text[], 1)], gen_random_uuid(), ($4::text[])[1 + i % 4], 1000 + i % 500, 200 + i % 100, 200,
        CASE WHEN i % 4 = 3 THEN NULL ELSE 3 END, CASE WHEN i % 4 = 3 THEN NULL ELSE 15 END, CASE WHEN i % 4 = 3 THEN NULL ELSE 'USD' END,
        now() - (i % 43200) * interval '1 minute'
      FROM generate_series(1, $5::int) i`,
    values: [p.accountId, p.projectId, sessionIds, MODELS, calls],
  });
  return { crEvents, sessionIds };
}

/** Appends real CR histories, one event per transaction, `WRITERS` at once; events/s. */
async function appendRun(db: Db, p: BenchProject, perWriter: number): Promise<number> {
  const histories = Array.from({ length: WRITERS }, (_, w) => crHistory(p, 100_000 + w, perWriter, Date.UTC(2026, 0, 1)));
  const t = process.hrtime.bigint();
  await Promise.all(
    histories.map(async (h) => {
      for (let i = 0; i < perWriter; i++) {
        await append(db, { streamId: streamIdOf(h.crId), streamType: STREAM_TYPE, projectId: p.projectId, expectedVersion: i, events: [h.events[i]!], metadata: { actor: p.userId } });
      }
    }),
  );
  return (WRITERS * perWriter) / seconds(t);
}

/** `fn` while a reader catches the projection up every `everyMs`; how many catch-ups ran and what they read. */
async function withReader<T>(db: Db, everyMs: number, fn: () => Promise<T>): Promise<{ value: T; passes: number; events: number }> {
  let stop = false;
  let passes = 0;
  let events = 0;
  const reader = (async () => {
    while (!stop) {
      events += await catchUpInsights(db);
      passes++;
      await new Promise((r) => setTimeout(r, everyMs));
    }
  })();
  try {
    return { value: await fn(), passes, events };
  } finally {
    stop = true;
    await reader;
  }
}

export const run: BenchSuite = async ({ quick }) => {
  const rows: BenchRow[] = [];
  const pgb = await startBenchPostgres('svc-bench-insights-');
  try {
    // (a) the query over >= 100k CR events and 10k model calls.
    const { db } = await pgb.database('bench_insights', { max: WRITERS + 4 });
    const [p] = await db.transaction((tx) => insertProjects(tx, 1, 'insights'));
    const target = quick ? 10_000 : 100_000;
    const calls = quick ? 1_000 : 10_000;
    const t0 = process.hrtime.bigint();
    const seeded = await seed(db, p!, 400, target, calls);
    const seedSecs = seconds(t0);
    await db.run({ text: 'VACUUM ANALYZE', values: [] });
    const t1 = process.hrtime.bigint();
    const caught = await catchUpInsights(db);
    const catchUpSecs = seconds(t1);
    await db.run({ text: 'VACUUM ANALYZE', values: [] });
    const facts = (await db.one<{ n: number }>({ text: 'SELECT count(*)::int AS n FROM insight_facts', values: [] }))!.n;
    const now = new Date();
    const window = (groupBy: GroupBy | null) => ({ scope: 'project' as const, id: p!.projectId, from: new Date(now.getTime() - 30 * 86_400_000), to: new Date(now.getTime() + 60_000), asOf: new Date(now.getTime() + 60_000), groupBy });
    const n = quick ? 10 : 30;
    const floorRuns = await timeRuns(n, () => db.rows({ text: 'SELECT type, count(*) FROM events WHERE project_id = $1 GROUP BY type', values: [p!.projectId] }));
    const floor = median(floorRuns);
    const check = await insightsOf(db, window('model'));
    const detail = `${seeded.crEvents} CR events + 400 sessions in one project (${facts} facts), ${calls} model calls; total: ${check.total.crs_opened} opened, ${check.total.crs_merged} merged, ${check.total.model_calls} calls`;
    for (const groupBy of ['model', 'week', null] as const) {
      const runs = await timeRuns(n, () => insightsOf(db, window(groupBy)));
      const p50 = median(runs);
      rows.push({
        suite: 'insights',
        name: `insights query, ${groupBy ? `per ${groupBy}` : 'total'}`,
        value: p50,
        unit: 'ms p50',
        floor,
        ratio: p50 / floor,
        goal: '<= 100 ms p50',
        met: p50 <= 100,
        notes: `${detail}; p95 ${percentile(runs, 95).toFixed(1)} ms; ${n} runs; floor: counting the project's events by type from the log (p50 ${floor.toFixed(1)} ms)`,
      });
    }
    rows.push({
      suite: 'insights',
      name: 'catch-up from nothing',
      value: caught / catchUpSecs,
      unit: 'events/s',
      notes: `${caught} events of the log read in ${catchUpSecs.toFixed(2)} s (seeded at ${Math.round((seeded.crEvents + 400) / seedSecs)} events/s)`,
    });

    // (b) appends with and without a reader catching the projection up.
    const { db: adb } = await pgb.database('bench_insights_append', { max: WRITERS + 4 });
    const [ap] = await adb.transaction((tx) => insertProjects(tx, 1, 'append'));
    const perWriter = quick ? 60 : 400;
    const rounds = quick ? 1 : 7;
    await appendRun(adb, ap!, 10); // warm-up
    const without: number[] = [];
    const withIt: number[] = [];
    let passes = 0;
    let read = 0;
    for (let r = 0; r < rounds; r++) {
      without.push(await appendRun(adb, ap!, perWriter));
      // Untimed: the reader of the next round projects that round's appends, not this one's.
      await catchUpInsights(adb);
      const w = await withReader(adb, 1000, () => appendRun(adb, ap!, perWriter));
      withIt.push(w.value);
      passes += w.passes;
      read += w.events;
    }
    await catchUpInsights(adb);
    const ratio = median(withIt.map((v, i) => v / without[i]!));
    rows.push({
      suite: 'insights',
      name: `events: append with the insights projection, ${WRITERS} writers`,
      value: median(withIt),
      unit: 'events/s',
      floor: median(without),
      ratio,
      goal: '>= 0.95x without',
      met: ratio >= 0.95,
      notes: `one event per transaction, ${WRITERS}x${perWriter} per round, median of ${rounds}; without ${without.map(Math.round).join('/')}, with ${withIt.map(Math.round).join('/')} (per-round ratios ${withIt.map((v, i) => (v / without[i]!).toFixed(2)).join('/')}); the reader: ${passes} catch-ups read ${read} events; nothing is added to the append itself`,
    });
    return rows;
  } finally {
    await pgb.stop();
  }
};
