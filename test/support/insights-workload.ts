/**
 * A scripted workload for the insights specs, on an injected clock: every command's `now`
 * is `clock.now`, which the script moves on by hand, so times to merge are exact. It goes
 * through the one write path (the session and CR handlers, the checks decider), and model
 * calls are priced usage rows as the gateway writes them. Two phases; `mid` is a recorded
 * instant between them (the log's clock, which `as_of` reads).
 */
import { randomUUID } from 'node:crypto';
import type { Db } from '../../infra/db/db.js';
import { handleSessionCommand } from '../../services/sessions/handle.js';
import { handleCommand, openInTx } from '../../services/change-requests/handle.js';
import { createCrCommandPath } from '../../services/change-requests/command-path.js';
import { appendCheckEvents } from '../../services/checks/stream.js';
import type { CrDeps } from '../../services/change-requests/service.js';
import { eventually } from './wait.js';

export interface Workload {
  sessions: { a: string; b: string; c: string };
  crs: Record<'cr1' | 'cr2' | 'cr3' | 'cr4' | 'cr5', string>;
  /** A recorded instant after phase one and before phase two (ISO, to the millisecond). */
  mid: string;
}

const sha = (n: number) => n.toString(16).padStart(40, 'a');

/** The database's clock to the millisecond, as `recorded_at` is compared. */
const dbNow = async (db: Db) => (await db.one<{ t: string }>({ text: `SELECT to_char(date_trunc('milliseconds', clock_timestamp()) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS t`, values: [] }))!.t;

export async function runInsightsWorkload(db: Db, p: { projectId: string; accountId: string; userId: string }): Promise<Workload> {
  let now = new Date('2026-03-02T09:00:00.000Z');
  const clock = () => new Date(now);
  const advance = (seconds: number) => void (now = new Date(now.getTime() + seconds * 1000));
  const commands = createCrCommandPath(db);
  const actor = p.userId;
  const meta = () => ({ actor, now: clock() });

  const session = async (agent: string, model: string, trigger: string | null) => {
    const id = randomUUID();
    await handleSessionCommand(db, id, () => ({
      type: 'CreateSession',
      data: { session_id: id, account_id: p.accountId, project_id: p.projectId, base_ref: 'main', agent, model, prompt: null, trigger },
      meta: meta(),
    }));
    return id;
  };
  const end = (id: string) => handleSessionCommand(db, id, () => ({ type: 'StopSession', data: { reason: 'user' }, meta: meta() }));
  let number = 1000;
  const open = async (sessionId: string) => {
    const crId = randomUUID();
    const n = ++number;
    await db.transaction((tx) =>
      openInTx(tx, p.projectId, crId, {
        type: 'OpenChangeRequest',
        data: { cr_id: crId, account_id: p.accountId, project_id: p.projectId, number: n, title: `work ${n}`, description: '', base_ref: 'main', head_ref: sessionId, head_commit_sha: sha(n), base_commit_sha: sha(1), origin_session_id: sessionId, metadata: {} },
        meta: { ...meta(), session_id: sessionId },
      }),
    );
    return crId;
  };
  const cx = { db, commands };
  const merge = (crId: string) =>
    handleCommand(cx, p.projectId, crId, () => ({ type: 'MergeChangeRequest', data: { strategy: 'fast-forward', base_commit_sha: sha(1), head_commit_sha: sha(2), merge_commit_sha: sha(2) }, meta: meta() }));
  const close = (crId: string) => handleCommand(cx, p.projectId, crId, () => ({ type: 'CloseChangeRequest', meta: meta() }));
  const reopen = (crId: string) => handleCommand(cx, p.projectId, crId, () => ({ type: 'ReopenChangeRequest', meta: meta() }));
  const sendBack = (crId: string, sessionId: string) =>
    handleCommand(cx, p.projectId, crId, () => ({
      type: 'SendChangeRequestToAgent',
      data: { round: 1, session_id: sessionId, comment_ids: [], items: [{ kind: 'check', ref: 'test' }], head_sha: sha(2), automatic: false, delivery: 'queued' },
      meta: meta(),
    }));
  const checksDeps = { db, commands, now: clock } as unknown as CrDeps;
  const check = async (crId: string, name: string, outcome: 'passed' | 'failed') => {
    const run = randomUUID();
    const at = () => clock().toISOString();
    await appendCheckEvents(checksDeps, p.projectId, crId, actor, () => [{ type: 'CheckQueued', data: { run_id: run, name, base_sha: sha(1), head_sha: sha(2), merge_sha: sha(2), queued_at: at() } }]);
    await appendCheckEvents(checksDeps, p.projectId, crId, actor, () => [{ type: 'CheckStarted', data: { run_id: run, started_at: at() } }]);
    advance(60);
    await appendCheckEvents(checksDeps, p.projectId, crId, actor, () => [
      outcome === 'passed' ? { type: 'CheckPassed', data: { run_id: run, finished_at: at() } } : { type: 'CheckFailed', data: { run_id: run, finished_at: at(), exit_code: 1, reason: 'exit' } },
    ]);
  };
  /** A model call as the gateway records it, at the price it was charged (per million tokens). */
  const call = (sessionId: string, model: string, input: number, output: number, price: [number, number] | null) =>
    db.run({
      text: `INSERT INTO llm_usage (account_id, project_id, session_id, sandbox_id, model, input_tokens, output_tokens, status, input_price_per_mtok, output_price_per_mtok, currency)
        VALUES ($1, $2, $3, $4, $5, $6, $7, 200, $8, $9, $10)`,
      values: [p.accountId, p.projectId, sessionId, randomUUID(), model, input, output, price?.[0] ?? null, price?.[1] ?? null, price ? 'USD' : null],
    });

  // Phase one. A: opencode on model-a by hand; B: opencode on model-b, fired by `nightly`; C: claude on model-a.
  const a = await session('opencode', 'model-a', null);
  const b = await session('opencode', 'model-b', 'nightly');
  const c = await session('claude', 'model-a', null);
  await call(a, 'model-a', 1000, 500, [3, 15]); // 0.0105 USD
  await call(b, 'model-b', 2000, 1000, [1, 5]); // 0.007 USD
  await call(b, 'model-u', 100, 50, null); // unpriced
  const cr1 = await open(a);
  await check(cr1, 'test', 'failed'); // its first run fails
  await sendBack(cr1, a); // a review round
  await check(cr1, 'test', 'passed'); // re-checked: not a first run
  advance(3600 - 60 - 60);
  await merge(cr1); // 3600 s after it opened
  const cr2 = await open(b);
  advance(7200);
  await merge(cr2); // 7200 s
  const cr3 = await open(b);
  advance(300);
  await close(cr3); // closed unmerged
  await end(c); // C ended without a CR (so far)
  const mid = await dbNow(db);
  // The next event is recorded after `mid` (the log's clock is the database's).
  await eventually(async () => (await dbNow(db)) > mid, 'the database clock past mid');

  // Phase two. A opens another CR, closed, reopened and merged; C opens one at last.
  advance(86_400);
  const cr4 = await open(a);
  advance(600);
  await close(cr4);
  advance(600);
  await reopen(cr4);
  advance(600);
  await merge(cr4); // 1800 s after it opened
  await call(a, 'model-a', 4000, 1000, [3, 15]); // 0.027 USD
  const cr5 = await open(c);
  await end(a);
  await end(b);
  await belowHorizon(db);
  return { sessions: { a, b, c }, crs: { cr1, cr2, cr3, cr4, cr5 }, mid };
}

/**
 * Until every event written here is older than every transaction still running: the
 * projection reads only that far (the log's commit-safe horizon), and the horizon is the
 * cluster's, so a transaction of another spec's database, running in parallel, holds it
 * back for a moment.
 */
export const belowHorizon = (db: Db) =>
  eventually(
    async () => (await db.one<{ ok: boolean }>({ text: 'SELECT coalesce(max(transaction_id::text::numeric) < pg_snapshot_xmin(pg_current_snapshot())::text::numeric, true) AS ok FROM events', values: [] }))?.ok === true,
    'every event below the commit-safe horizon',
    { timeoutMs: 60_000, maxIntervalMs: 50 },
  );
