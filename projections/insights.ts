import type { Db, Executor } from '../infra/db/db.js';
import { advisoryLockQueries } from '../sql/queries/advisory-locks.js';
import { parseChangeRequestEvent } from '../domain/change-request/index.js';
import { parseSessionEvent } from '../domain/session/index.js';
import {
  insightQueries as q,
  INSIGHT_ROW_TABLES,
  type InsightCrRow,
  type InsightFactRow,
  type InsightRunRow,
  type InsightSessionRow,
  type InsightRowTable,
  type InsightTable,
} from '../sql/queries/insights.js';

/**
 * The insights projection (docs/insights.md): dated facts of outcomes, each counted for the
 * agent, model, trigger and person of the session behind it. It is kept after the fact,
 * never on the append path: `catchUpInsights` reads the log from its checkpoint up to the
 * commit-safe horizon (only transactions older than every one still running, so an event
 * committed late is never skipped) and a reader calls it before it answers. One folder
 * says what an event changes; the catch-up runs it on the rows a page needs, the rebuild
 * on the whole log in memory, so `rebuild --verify` compares like with like.
 */

/** The types the projection reads. A queue ejection is counted by name: its aggregate's catalog may not know it yet. */
const SESSION_TYPES = ['SessionCreated', 'SessionStopped', 'SessionFailed', 'SessionRemoved'] as const;
const CR_TYPES = ['ChangeRequestOpened', 'ChangeRequestMerged', 'ChangeRequestClosed', 'ChangeRequestReopened', 'ChangeRequestSentToAgent', 'CheckQueued', 'CheckFailed', 'CheckErrored'] as const;
const QUEUE_EJECTED = 'ChangeRequestDequeued';
export const INSIGHT_EVENT_TYPES: readonly string[] = [...SESSION_TYPES, ...CR_TYPES, QUEUE_EJECTED];
const READ = new Set(INSIGHT_EVENT_TYPES);

export interface LogEvent {
  global_position: number;
  txid: string;
  stream_id: string;
  type: string;
  data: unknown;
  project_id: string | null;
  /** ISO, to the millisecond (as every `as_of` compares). */
  recorded_at: string;
}

const crIdOf = (streamId: string) => (streamId.startsWith('cr-') ? streamId.slice(3) : null);
const sessionIdOf = (streamId: string) => (streamId.startsWith('session-') ? streamId.slice(8) : null);

export class InsightsFolder {
  readonly sessions = new Map<string, InsightSessionRow>();
  readonly crs = new Map<string, InsightCrRow>();
  readonly runs = new Map<string, InsightRunRow>();
  /** `cr_id/name` of checks that have a run. */
  readonly pairs = new Set<string>();
  facts: InsightFactRow[] = [];
  readonly changedSessions = new Set<string>();
  newCrs: InsightCrRow[] = [];
  newRuns: InsightRunRow[] = [];

  /** What a page of the log needs loaded before it is applied (the catch-up's reads). */
  static needs(page: LogEvent[]): { sessions: string[]; crs: string[]; runs: string[] } {
    const sessions = new Set<string>();
    const crs = new Set<string>();
    const runs = new Set<string>();
    for (const e of page) {
      if (!READ.has(e.type)) continue;
      const s = sessionIdOf(e.stream_id);
      if (s) sessions.add(s);
      const c = crIdOf(e.stream_id);
      if (c) crs.add(c);
      const d = e.data as { origin_session_id?: string | null; run_id?: string } | null;
      if (e.type === 'ChangeRequestOpened' && d?.origin_session_id) sessions.add(d.origin_session_id);
      if ((e.type === 'CheckFailed' || e.type === 'CheckErrored') && d?.run_id) runs.add(d.run_id);
    }
    return { sessions: [...sessions], crs: [...crs], runs: [...runs] };
  }

  load(rows: { sessions: InsightSessionRow[]; crs: InsightCrRow[]; runs: InsightRunRow[]; pairs: string[] }): void {
    for (const s of rows.sessions) this.sessions.set(s.session_id, s);
    for (const c of rows.crs) this.crs.set(c.cr_id, c);
    for (const r of rows.runs) this.runs.set(r.run_id, r);
    for (const p of rows.pairs) this.pairs.add(p);
  }

  /** An event whose data its catalog refuses is counted nowhere, the same way live and in a rebuild. */
  apply(e: LogEvent): void {
    if (!READ.has(e.type)) return;
    try {
      const sessionId = sessionIdOf(e.stream_id);
      if (sessionId) return this.applySession(e, sessionId);
      const crId = crIdOf(e.stream_id);
      if (crId) this.applyCr(e, crId);
    } catch {
      // One malformed event must not stop the projection (and every read after it) for good.
    }
  }

  private applySession(e: LogEvent, sessionId: string): void {
    const event = parseSessionEvent(e);
    if (event.type === 'SessionCreated') {
      const d = event.data;
      if (this.sessions.has(sessionId)) return;
      this.sessions.set(sessionId, { session_id: sessionId, project_id: d.project_id, account_id: d.account_id, agent: d.agent, model: d.model, trigger: d.trigger, person: d.created_by, ended: false });
      this.changedSessions.add(sessionId);
      return;
    }
    // Stopped, failed or removed: the first of them ends it for these counts (a restart does not undo it).
    const s = this.sessions.get(sessionId);
    if (!s || s.ended) return;
    s.ended = true;
    this.changedSessions.add(sessionId);
    this.fact(e, 'session_ended', 1, { project_id: s.project_id, account_id: s.account_id, cr_id: null, session_id: sessionId, agent: s.agent, model: s.model, trigger: s.trigger, person: s.person }, null);
  }

  private applyCr(e: LogEvent, crId: string): void {
    if (e.type === QUEUE_EJECTED) {
      const cr = this.crs.get(crId);
      if (cr) this.crFact(e, 'ejected', 1, cr, null);
      return;
    }
    const event = parseChangeRequestEvent(e);
    switch (event.type) {
      case 'ChangeRequestOpened': {
        const d = event.data;
        if (this.crs.has(crId)) return;
        const s = d.origin_session_id ? this.sessions.get(d.origin_session_id) : undefined;
        const cr: InsightCrRow = {
          cr_id: crId,
          project_id: d.project_id,
          account_id: d.account_id,
          session_id: s ? s.session_id : null,
          agent: s?.agent ?? null,
          model: s?.model ?? null,
          trigger: s?.trigger ?? null,
          person: s?.person ?? d.created_by,
          opened_at: new Date(d.created_at).toISOString(),
        };
        this.crs.set(crId, cr);
        this.newCrs.push(cr);
        this.crFact(e, 'opened', 1, cr, null);
        return;
      }
      case 'ChangeRequestMerged': {
        const cr = this.crs.get(crId);
        if (cr) this.crFact(e, 'merged', 1, cr, (Date.parse(event.data.merged_at) - Date.parse(cr.opened_at)) / 1000);
        return;
      }
      case 'ChangeRequestClosed':
      case 'ChangeRequestReopened': {
        const cr = this.crs.get(crId);
        // Closed unmerged counts CRs closed now: a reopen takes one back, dated by the reopen.
        if (cr) this.crFact(e, 'closed', event.type === 'ChangeRequestClosed' ? 1 : -1, cr, null);
        return;
      }
      case 'ChangeRequestSentToAgent': {
        const cr = this.crs.get(crId);
        if (cr) this.crFact(e, 'round', 1, cr, null);
        return;
      }
      case 'CheckQueued': {
        const pair = `${crId}/${event.data.name}`;
        if (this.runs.has(event.data.run_id)) return;
        const run: InsightRunRow = { run_id: event.data.run_id, cr_id: crId, name: event.data.name, first: !this.pairs.has(pair) };
        this.pairs.add(pair);
        this.runs.set(run.run_id, run);
        this.newRuns.push(run);
        return;
      }
      case 'CheckFailed':
      case 'CheckErrored': {
        const run = this.runs.get(event.data.run_id);
        const cr = this.crs.get(crId);
        // A check failing on its first run: the first run of its name on the CR ended failed or errored.
        if (run?.first && cr) this.crFact(e, 'check_failed_first', 1, cr, null);
        return;
      }
      default:
        return;
    }
  }

  private crFact(e: LogEvent, kind: InsightFactRow['kind'], weight: number, cr: InsightCrRow, seconds: number | null): void {
    this.fact(e, kind, weight, { project_id: cr.project_id, account_id: cr.account_id, cr_id: cr.cr_id, session_id: cr.session_id, agent: cr.agent, model: cr.model, trigger: cr.trigger, person: cr.person }, seconds);
  }

  private fact(e: LogEvent, kind: InsightFactRow['kind'], weight: number, who: Omit<InsightFactRow, 'global_position' | 'kind' | 'weight' | 'seconds' | 'recorded_at'>, seconds: number | null): void {
    this.facts.push({ global_position: e.global_position, kind, weight, ...who, seconds, recorded_at: e.recorded_at });
  }

  /** Every row (a rebuild). */
  allRows(): Record<InsightRowTable, object[]> {
    return {
      insight_sessions: [...this.sessions.values()],
      insight_crs: [...this.crs.values()],
      insight_check_runs: [...this.runs.values()],
      insight_facts: this.facts,
    };
  }

  /** The rows a page changed (a catch-up), then forgets them. */
  takeChanges(): Record<InsightRowTable, object[]> {
    const out = {
      insight_sessions: [...this.changedSessions].map((id) => this.sessions.get(id)!),
      insight_crs: this.newCrs,
      insight_check_runs: this.newRuns,
      insight_facts: this.facts,
    };
    this.changedSessions.clear();
    this.newCrs = [];
    this.newRuns = [];
    this.facts = [];
    return out;
  }
}

const PAGE = 5000;
const CHUNK = 2000;

async function writeRows(tx: Executor, rows: Record<InsightRowTable, object[]>, suffix: '' | '_rebuilt'): Promise<void> {
  for (const t of INSIGHT_ROW_TABLES) {
    const all = rows[t];
    for (let i = 0; i < all.length; i += CHUNK) await tx.run(q.upsert(`${t}${suffix}`, all.slice(i, i + CHUNK)));
  }
}

/**
 * Brings the projection up to the log's commit-safe horizon; returns how many events it
 * read. Nothing new: one statement, no transaction. Otherwise page by page, each page in a
 * transaction of its own (short: a long one would hold back every commit-safe reader of
 * the log, the events feed's among them) that takes the catch-up lock, reads the
 * checkpoint, and writes the page's rows with the next checkpoint.
 */
export async function catchUpInsights(db: Db): Promise<number> {
  if (!(await db.one(q.anythingNew()))) return 0;
  let n = 0;
  for (;;) {
    const read = await db.transaction((tx) => catchUpPage(tx));
    n += read;
    if (read < PAGE) return n;
  }
}

async function catchUpPage(tx: Executor): Promise<number> {
  // One catch-up at a time reads and writes the projection (held to the commit).
  await tx.run(advisoryLockQueries.xactLock('svc.insights.catch-up'));
  const from = (await tx.one<{ txid: string; position: number }>(q.checkpoint()))!;
  const page = await tx.rows<LogEvent>(q.pageAfter(from, PAGE, INSIGHT_EVENT_TYPES, { commitSafe: true }));
  if (page.length === 0) return 0;
  const folder = new InsightsFolder();
  const needs = InsightsFolder.needs(page);
  const crIds = needs.crs;
  // One connection: the reads one after another.
  const sessions = needs.sessions.length ? await tx.rows<InsightSessionRow>(q.sessionsByIds(needs.sessions)) : [];
  const crs = crIds.length ? await tx.rows<InsightCrRow>(q.crsByIds(crIds)) : [];
  const runs = needs.runs.length ? await tx.rows<InsightRunRow>(q.runsByIds(needs.runs)) : [];
  const pairs = crIds.length ? await tx.rows<{ pair: string }>(q.namesWithRuns(crIds)) : [];
  folder.load({ sessions, crs, runs, pairs: pairs.map((p) => p.pair) });
  for (const e of page) folder.apply(e);
  const changes = folder.takeChanges();
  await writeRows(tx, changes, '');
  for (let i = 0; i < changes.insight_facts.length; i += CHUNK) await tx.run(q.addToBuckets(changes.insight_facts.slice(i, i + CHUNK)));
  const last = page[page.length - 1]!;
  await tx.run(q.setCheckpoint({ txid: last.txid, position: last.global_position }));
  return page.length;
}

/**
 * The rebuild's part, inside its repeatable-read transaction: replays the log into scratch
 * tables. `verify`: up to the live checkpoint (what the live rows reflect), then the rows
 * that differ. Otherwise up to the commit-safe horizon, replacing the live rows and the
 * checkpoint.
 */
export async function rebuildInsights(tx: Executor, verify: boolean): Promise<{ events: number; differences: { side: 'live_only' | 'rebuilt_only'; table: InsightTable; id: string }[] }> {
  const upTo = verify ? (await tx.one<{ txid: string; position: number }>(q.checkpoint()))! : undefined;
  const folder = new InsightsFolder();
  let from = { txid: '0', position: 0 };
  let n = 0;
  for (;;) {
    const page = await tx.rows<LogEvent>(q.pageAfter(from, 10_000, INSIGHT_EVENT_TYPES, upTo ? { commitSafe: false, upTo, onlyTypes: true } : { commitSafe: true, onlyTypes: true }));
    for (const e of page) folder.apply(e);
    n += page.length;
    if (page.length > 0) from = { txid: page[page.length - 1]!.txid, position: page[page.length - 1]!.global_position };
    if (page.length < 10_000) break;
  }
  await tx.run(q.createScratch());
  await writeRows(tx, folder.allRows(), '_rebuilt');
  await tx.run(q.bucketsOfScratch());
  if (verify) return { events: n, differences: await tx.rows(q.diffScratch(100)) };
  await tx.run(q.replaceLive());
  if (n > 0) await tx.run(q.setCheckpoint(from));
  return { events: n, differences: [] };
}
