import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { createDb, type Db } from '../../../infra/db/db.js';
import { readStream } from '../../../infra/event-store.js';
import { handleMany } from '../../../infra/event-sourcing/handler.js';
import { pgStore } from '../../../infra/event-sourcing/pg-store.js';
import { streamKey } from '../../../infra/event-sourcing/port.js';
import { changeRequestDecider, fold, parseChangeRequestEvent, streamIdOf, type ChangeRequestCommand } from '../../../domain/change-request/index.js';
import { isDomainError } from '../../../domain/errors.js';
import type { SessionCommand } from '../../../domain/session/index.js';
import { crProjection, crStream, toRow } from '../../../projections/change-requests.js';
import { rebuildProjections } from '../../../projections/rebuild.js';
import { crQueries } from '../../../sql/queries/change-requests.js';
import { decodeCrRow } from '../../../sql/queries/change-request-row.js';
import { handleCommand, openInTx } from '../../../services/change-requests/handle.js';
import { createCrCommandPath, type CrCommandPath } from '../../../services/change-requests/command-path.js';
import type { CrDeps } from '../../../services/change-requests/service.js';
import { appendCheckEvents } from '../../../services/checks/stream.js';
import { withReviewRows } from '../../../services/review/comments.js';
import { handleSessionCommand } from '../../../services/sessions/handle.js';
import { appendLog } from '../../../services/manifest/audit-log.js';
import { insertProjects, type BenchProject } from '../../../bench/support/cr-events.js';
import { createTestDb, type TestDb } from '../../support/db.js';

/** Mulberry32: a seeded PRNG, so a failing workload can be replayed. */
function prng(seed: number) {
  return () => {
    seed |= 0;
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * The one write path under a randomized concurrent workload: change requests (with
 * checks, reviews, merges and a list's batched refreshes) and sessions, written by two
 * server processes (each its own pool, group commit and row cache) at once. Afterwards
 * the projected rows equal a replay of the log (`projections rebuild --verify`), every row
 * a process still caches equals the fold of its stream up to the cached version (so
 * deciding on the cache is deciding on the folded state), and a rebuild leaves the audit
 * logs as they were.
 */
describe('the one write path: a randomized workload, then rebuild --verify', function () {
  this.timeout(120_000);
  let t: TestDb;
  let second: Db;
  let projects: BenchProject[];
  let paths: { db: Db; commands: CrCommandPath }[];
  const seed = Number(process.env.SVC_TEST_SEED ?? Date.now() % 100000);

  before(async () => {
    t = await createTestDb();
    second = createDb(t.url, { max: 4 });
    projects = await t.db.transaction((tx) => insertProjects(tx, 2, 'wp'));
    paths = [
      { db: t.db, commands: createCrCommandPath(t.db) },
      { db: second, commands: createCrCommandPath(second) },
    ];
  });
  after(async () => {
    await second.close();
    await t.drop();
  });

  it(`rows equal a replay, cached rows equal the fold, audit logs survive a rebuild (seed ${seed})`, async () => {
    console.log(`      write path: seed ${seed} (replay with SVC_TEST_SEED=${seed})`);
    const rnd = prng(seed);
    const pick = <T>(xs: T[]) => xs[Math.floor(rnd() * xs.length)]!;
    const sha = () => Array.from({ length: 40 }, () => '0123456789abcdef'[Math.floor(rnd() * 16)]).join('');
    const crs: { p: BenchProject; crId: string }[] = [];
    const sessions: { p: BenchProject; id: string }[] = [];
    const now = () => new Date();
    const tolerated = (err: unknown) => {
      // Refusals are the deciders' answers to a random command (closing a merged CR, ...), not failures.
      if (isDomainError(err) && ['conflict', 'not_found', 'validation'].includes(err.code)) return;
      throw err;
    };
    const counts: Record<string, number> = {};

    async function step(i: number): Promise<void> {
      const p = pick(projects);
      const path = pick(paths);
      const cr = crs.length ? pick(crs) : undefined;
      const op = !cr ? 'open' : pick(['open', 'edit', 'close', 'reopen', 'refresh', 'refresh', 'page', 'review', 'check', 'check', 'merge', 'session', 'session']);
      counts[op] = (counts[op] ?? 0) + 1;
      const command = (c: (s: { status: string }) => ChangeRequestCommand | null) => handleCommand(path, cr!.p.projectId, cr!.crId, c).then(() => undefined, tolerated);
      const meta = { actor: p.userId, now: now() };
      switch (op) {
        case 'open': {
          const crId = randomUUID();
          await path.db.transaction(async (tx) => {
            const { number } = (await tx.one<{ number: number }>(crQueries.nextNumber(p.projectId)))!;
            await openInTx(tx, p.projectId, crId, {
              type: 'OpenChangeRequest',
              data: {
                cr_id: crId, account_id: p.accountId, project_id: p.projectId, number, title: `W${i}`, description: '', base_ref: 'main',
                head_ref: `w/${number}`, head_commit_sha: rnd() < 0.8 ? sha() : null, base_commit_sha: sha(), origin_session_id: null, metadata: { i },
              },
              meta,
            });
          });
          crs.push({ p, crId });
          return;
        }
        case 'edit':
          return command(() => ({ type: 'EditChangeRequest', data: rnd() < 0.5 ? { title: `E${i}` } : { description: `D${i}` }, meta: { ...meta, actor: cr!.p.userId } }));
        case 'close':
          return command(() => ({ type: 'CloseChangeRequest', meta: { ...meta, actor: cr!.p.userId } }));
        case 'reopen':
          return command(() => ({ type: 'ReopenChangeRequest', meta: { ...meta, actor: cr!.p.userId } }));
        case 'refresh':
          return command(() => ({ type: 'RefreshChangeRequest', data: { head_commit_sha: sha(), base_commit_sha: sha() }, meta: { ...meta, actor: cr!.p.userId } }));
        case 'merge':
          return command(() => ({ type: 'MergeChangeRequest', data: { strategy: 'merge-commit', base_commit_sha: sha(), head_commit_sha: sha(), merge_commit_sha: sha() }, meta: { ...meta, actor: cr!.p.userId } }));
        case 'review':
          await handleCommand(path, cr!.p.projectId, cr!.crId, () => ({ type: 'MarkChangeRequestReviewed', data: { head_sha: sha() }, meta: { ...meta, actor: cr!.p.userId } }), withReviewRows(cr!.p.projectId)).catch(tolerated);
          return;
        case 'page': {
          // A list page's refreshes: rows read, then one statement for all of them.
          const some = [...new Set(Array.from({ length: 3 }, () => pick(crs)))];
          const rows = await Promise.all(some.map(async (c) => decodeCrRow((await path.db.one(crQueries.byId(c.p.projectId, c.crId)))!)));
          await handleMany(
            rows.filter((r) => r.status === 'open').map((row) => ({
              stream: crStream(row.project_id, row.cr_id),
              row,
              command: () => ({ type: 'RefreshChangeRequest' as const, data: { head_commit_sha: sha(), base_commit_sha: sha() }, meta: { actor: row.created_by, now: now() } }),
            })),
            changeRequestDecider,
            crProjection,
            pgStore(path.db),
          );
          return;
        }
        case 'check': {
          const deps = { ...path, now } as unknown as CrDeps;
          await appendCheckEvents(deps, cr!.p.projectId, cr!.crId, 'system', (s) => {
            const live = s.checks.runs.filter((r) => r.status === 'queued' || r.status === 'running');
            if (live.length && rnd() < 0.6) {
              const r = pick(live);
              const at = now().toISOString();
              return [r.status === 'queued' ? { type: 'CheckStarted', data: { run_id: r.run_id, started_at: at } } : pick([{ type: 'CheckPassed', data: { run_id: r.run_id, finished_at: at } }, { type: 'CheckFailed', data: { run_id: r.run_id, finished_at: at, exit_code: 1, reason: 'exit' } }] as const)];
            }
            const { base_commit_sha: base, head_commit_sha: head } = s.cr;
            if (s.cr.status !== 'open' || !base || !head) return [];
            return [{ type: 'CheckQueued', data: { run_id: randomUUID(), name: pick(['test', 'lint']), base_sha: base, head_sha: head, merge_sha: head, queued_at: now().toISOString() } }];
          }).catch(tolerated);
          return;
        }
        case 'session': {
          const s = sessions.length && rnd() < 0.6 ? pick(sessions) : undefined;
          const id = s?.id ?? randomUUID();
          const owner = s?.p ?? p;
          const cmd: (st: unknown) => SessionCommand = s
            ? () => (rnd() < 0.7 ? { type: 'StopSession', data: { reason: 'user' }, meta: { actor: owner.userId, now: now() } } : { type: 'RemoveSession', meta: { actor: owner.userId, now: now() } })
            : () => ({ type: 'CreateSession', data: { session_id: id, account_id: owner.accountId, project_id: owner.projectId, base_ref: 'main', agent: 'opencode', model: null, prompt: null, trigger: null }, meta: { actor: owner.userId, now: now() } });
          await handleSessionCommand(path.db, id, cmd).catch(tolerated);
          if (!s) sessions.push({ p: owner, id });
          return;
        }
      }
    }

    // Waves of concurrent commands, so group commit batches form and caches go stale.
    for (let i = 0; i < 400; i += 8) await Promise.all(Array.from({ length: 8 }, (_, k) => step(i + k)));
    expect(crs.length, JSON.stringify(counts)).to.be.greaterThan(10);

    // Audit logs beside directly written tables.
    for (const p of projects) await t.db.transaction((tx) => appendLog(tx, 'manifest', p.projectId, [{ type: 'ManifestSynced', data: { i: 1 } }], 'system'));
    const audit = async () => (await Promise.all(projects.map((p) => readStream(t.db, `manifest-${p.projectId}`)))).map((es) => es.map((e) => e.event_id));
    const auditBefore = await audit();

    const verify = await rebuildProjections(t.db, { verify: true });
    expect(verify.differences, 'live rows against a replay of the log').to.deep.equal([]);
    expect(verify.rows).to.equal(crs.length);
    expect(verify.sessions, 'sessions were written (and some removed)').to.be.greaterThan(0).and.lessThan(sessions.length);

    let cached = 0;
    for (const { db, commands } of paths) {
      for (const c of crs) {
        const row = commands.cache.get(streamKey(crStream(c.p.projectId, c.crId))) as ReturnType<typeof toRow> | undefined;
        if (!row) continue;
        cached++;
        const events = (await readStream(db, streamIdOf(c.crId))).slice(0, row.stream_version).map(parseChangeRequestEvent);
        expect(row, `the cached row of ${c.crId} against the fold of its stream`).to.deep.equal(toRow(fold(events)!, row.stream_version));
      }
    }
    expect(cached, 'the workload left rows in the caches').to.be.greaterThan(0);

    const applied = await rebuildProjections(t.db, { verify: false });
    expect(applied.applied).to.equal(true);
    expect(await audit(), 'a rebuild leaves the audit logs as they were').to.deep.equal(auditBefore);
    expect((await rebuildProjections(t.db, { verify: true })).differences).to.deep.equal([]);
  });
});
