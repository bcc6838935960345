import { notFound, validationError } from '../../domain/errors.js';
import type { Db } from '../../infra/db/db.js';
import { nowOf } from '../../lib/clock.js';
import type { InsightRow, InsightsQuery } from '../../contracts/insights.js';
import { catchUpInsights } from '../../projections/insights.js';
import { insightQueries, type Edges, type InsightWindow, type Segment } from '../../sql/queries/insights.js';
import { isMember } from '../accounts/service.js';
import { projectForCaller, type LoadedProject, type ProjectCaller } from '../projects/access.js';

/**
 * Outcomes and cost (docs/insights.md): counts from the insights projection of the event
 * log, tokens and money from `llm_usage`, per group and in total. The API, `svc insights`
 * (over the API) and the dashboard's insights page all read `insightsOf`, so their numbers
 * are the same numbers.
 */
export interface InsightsReport extends InsightWindow {
  groups: InsightRow[];
  total: InsightRow;
}

const DAY_MS = 86_400_000;
/** The window when none is given: the 30 days before `to`. */
const DEFAULT_DAYS = 30;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Money to the micro-unit: every reader shows the same rounded figure. */
const money = (n: number) => Math.round(n * 1e6) / 1e6;

/** The window a query names: `to` defaults to just after as_of (everything recorded by then), `from` to 30 days before `to`. */
export function windowOf(q: InsightsQuery, now: Date): { from: Date; to: Date; asOf: Date } {
  const asOf = q.as_of ? new Date(q.as_of) : now;
  const to = q.to ? new Date(q.to) : new Date(asOf.getTime() + 1);
  const from = q.from ? new Date(q.from) : new Date(to.getTime() - DEFAULT_DAYS * DAY_MS);
  for (const [path, t] of [['from', from], ['to', to], ['as_of', asOf]] as const) {
    // PostgreSQL has no year 0 (ISO 8601 writes 1 BC so): refused as the input it is, not a 500.
    if (t.getUTCFullYear() < 1) throw validationError(`${path} must be in the years 1 to 9999.`, [{ path, message: 'must be in the years 1 to 9999' }]);
  }
  if (from.getTime() >= to.getTime()) throw validationError('from must be before to.', [{ path: 'from', message: 'must be before to' }]);
  return { from, to, asOf };
}

/** The database, and the clock `as_of` defaults to (lib/clock.ts). */
export interface InsightDeps {
  db: Db;
  now?: (() => Date) | undefined;
}

export async function projectInsights(deps: InsightDeps, caller: ProjectCaller, projectRef: string, q: InsightsQuery, loaded?: LoadedProject): Promise<InsightsReport> {
  const project = await projectForCaller(deps.db, caller, projectRef, loaded);
  return insightsOf(deps.db, { scope: 'project', id: project.project_id, ...windowOf(q, nowOf(deps)), groupBy: q.group_by ?? null });
}

/** An account's insights, for its members (anyone else: 404, as for an account that does not exist). */
export async function accountInsights(deps: InsightDeps, caller: ProjectCaller, accountId: string, q: InsightsQuery): Promise<InsightsReport> {
  if (!UUID.test(accountId) || !(await isMember(deps.db, accountId.toLowerCase(), caller.user_id))) throw notFound('Account');
  return insightsOf(deps.db, { scope: 'account', id: accountId.toLowerCase(), ...windowOf(q, nowOf(deps)), groupBy: q.group_by ?? null });
}

interface OutcomeRow {
  key: string | null;
  total: boolean;
  opened: number;
  merged: number;
  closed: number;
  rounds: number;
  checks_failed_first: number;
  ejections: number;
  sessions_without_cr?: number;
  median_seconds?: number | null;
}
interface TimesRow {
  key: string | null;
  total: boolean;
  sessions_without_cr: number;
  median_seconds: number | null;
}

const MINUTE_MS = 60_000;
const HOUR_MS = 3_600_000;
const up = (t: number, unit: number) => Math.ceil(t / unit) * unit;
const down = (t: number, unit: number) => Math.floor(t / unit) * unit;

/** [lo, hi) of recorded times (as_of: recorded by then, to the millisecond). */
export function edgesOf(w: Pick<InsightWindow, 'from' | 'to' | 'asOf'>): Edges {
  return { lo: w.from, hi: new Date(Math.min(w.to.getTime(), w.asOf.getTime() + 1)) };
}

/**
 * The window cut into what each source covers exactly: whole UTC hours from the hour
 * buckets, whole minutes around them from the minute buckets, the rest (under a minute at
 * each edge) from the facts. Together they cover [lo, hi) once.
 */
export function segmentsOf(e: Edges): Segment[] {
  const lo = e.lo.getTime();
  const hi = e.hi.getTime();
  if (hi <= lo) return [];
  const [m1, m2] = [up(lo, MINUTE_MS), down(hi, MINUTE_MS)];
  if (m1 > m2) return [{ source: 'facts', from: e.lo, to: e.hi }]; // within one minute
  const [h1, h2] = [up(lo, HOUR_MS), down(hi, HOUR_MS)];
  const out: Segment[] = [];
  const add = (source: Segment['source'], a: number, b: number) => void (a < b && out.push({ source, from: new Date(a), to: new Date(b) }));
  add('facts', lo, m1);
  if (h1 < h2) {
    add('minute', m1, h1);
    add('hour', h1, h2);
    add('minute', h2, m2);
  } else add('minute', m1, m2);
  add('facts', m2, hi);
  return out;
}

interface UsageRow {
  key: string | null;
  total: boolean;
  currency: string | null;
  input_tokens: number;
  output_tokens: number;
  calls: number;
  unpriced_calls: number;
  money: number | null;
}

/** The worker's pass: the projection kept close to the log, so a read seldom has much to catch up. */
export const keepInsightsCurrent = (db: Db): Promise<number> => catchUpInsights(db);

/** The one computation: the projection caught up to the log, then both reads, merged per group. */
export async function insightsOf(db: Db, w: InsightWindow): Promise<InsightsReport> {
  await catchUpInsights(db);
  const e = edgesOf(w);
  const [outcomes, times, usage] = await Promise.all([
    db.rows<OutcomeRow>(insightQueries.counts(w, segmentsOf(e))),
    db.rows<TimesRow>(insightQueries.mediansAndEnds(w, e)),
    db.rows<UsageRow>(insightQueries.usage(w, e)),
  ]);
  const rows = new Map<string, { o?: OutcomeRow; u: UsageRow[] }>();
  const slot = (key: string | null, total: boolean) => {
    const k = total ? 'total' : `g:${key ?? ''}:${key === null ? 'null' : ''}`;
    let r = rows.get(k);
    if (!r) rows.set(k, (r = { u: [] }));
    return r;
  };
  for (const o of outcomes) slot(o.key, o.total).o = o;
  for (const t of times) {
    const r = slot(t.key, t.total);
    r.o = { ...(r.o ?? { key: t.key, total: t.total, opened: 0, merged: 0, closed: 0, rounds: 0, checks_failed_first: 0, ejections: 0 }), sessions_without_cr: t.sessions_without_cr, median_seconds: t.median_seconds };
  }
  for (const u of usage) slot(u.key, u.total).u.push(u);
  const build = (key: string | null, r: { o?: OutcomeRow; u: UsageRow[] } | undefined): InsightRow => {
    const o = r?.o;
    const u = r?.u ?? [];
    const merged = o?.merged ?? 0;
    const closed = o?.closed ?? 0;
    const priced = u.filter((x) => x.currency !== null && x.money !== null).sort((a, b) => a.currency!.localeCompare(b.currency!));
    return {
      key,
      crs_opened: o?.opened ?? 0,
      crs_merged: merged,
      crs_closed_unmerged: closed,
      merge_rate: merged + closed > 0 ? Math.round((merged / (merged + closed)) * 1e4) / 1e4 : null,
      median_seconds_to_merge: o?.median_seconds ?? null,
      review_rounds: o?.rounds ?? 0,
      checks_failed_first_run: o?.checks_failed_first ?? 0,
      queue_ejections: o?.ejections ?? 0,
      sessions_without_cr: o?.sessions_without_cr ?? 0,
      model_calls: u.reduce((n, x) => n + x.calls, 0),
      unpriced_calls: u.reduce((n, x) => n + x.unpriced_calls, 0),
      input_tokens: u.reduce((n, x) => n + x.input_tokens, 0),
      output_tokens: u.reduce((n, x) => n + x.output_tokens, 0),
      money: priced.map((x) => ({ currency: x.currency!, amount: money(x.money!) })),
      cost_per_merged_cr: merged > 0 ? priced.map((x) => ({ currency: x.currency!, amount: money(x.money! / merged) })) : [],
    };
  };
  const groups: InsightRow[] = [];
  for (const [k, r] of rows) {
    if (k === 'total' || !w.groupBy) continue;
    groups.push(build((r.o ?? r.u[0])!.key, r));
  }
  // Groups with the most merged first, then by key; none (null) last among equals.
  groups.sort((a, b) => b.crs_merged - a.crs_merged || b.crs_opened - a.crs_opened || (a.key ?? '\uffff').localeCompare(b.key ?? '\uffff'));
  if (w.groupBy === 'week') groups.sort((a, b) => (a.key ?? '').localeCompare(b.key ?? ''));
  return { scope: w.scope, id: w.id, from: w.from, to: w.to, asOf: w.asOf, groupBy: w.groupBy, groups, total: build(null, rows.get('total')) };
}
