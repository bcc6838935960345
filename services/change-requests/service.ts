import { randomUUID } from 'node:crypto';
import type { Db } from '../../infra/db/db.js';
import { readStream, type EventMetadata } from '../../infra/event-store.js';
import { assertBranchName } from '../../domain/refs.js';
import type { DiffResult, MergePreview, ProjectRepo } from '../../infra/git/port.js';
import type { Logger } from '../../lib/logger.js';
import { DomainError, isDomainError, notFound, validationError } from '../../domain/errors.js';
import {
  assertCanOpen,
  changeRequestDecider,
  fold,
  parseChangeRequestEvent,
  streamIdOf,
  type ChangeRequest,
  type CrStatus,
  type StackNode,
} from '../../domain/change-request/index.js';
import { crQueries } from '../../sql/queries/change-requests.js';
import { projectQueries } from '../../sql/queries/projects.js';
import { crOfRow, decodeCrRow, type CrRow } from '../../sql/queries/change-request-row.js';
import { crProjection, crStream, toRow } from '../../projections/change-requests.js';
import { handleMany } from '../../infra/event-sourcing/handler.js';
import { pgStore } from '../../infra/event-sourcing/pg-store.js';
import { handleCommand, openInTx } from './handle.js';
import type { CrCommandPath } from './command-path.js';
import type { EventStore } from '../../infra/event-sourcing/port.js';
import { withMergeLock } from './merge-lock.js';
import { crNumberOf } from '../../domain/change-request/reference.js';
import { DEFAULT_DIFF_LIMITS, limitDiff, type DiffLimits, type LimitedDiff } from './diff-limits.js';
import type { ProjectRepos } from '../../infra/git/project-repos.js';
import type { ProjectRecord } from '../../domain/project.js';
import { nowOf } from '../../lib/clock.js';

export interface CrDeps {
  db: Db;
  /** The process's CR command path (group commit, grouped reads, cached rows): made once by the wiring. */
  commands: CrCommandPath;
  /** The event store commands write through instead of PostgreSQL's over `db` (unit tests: MemoryEventStore). */
  store?: EventStore;
  repos: ProjectRepos;
  logger: Logger;
  now?: () => Date;
  /** Budget of the refresh a read makes (SVC_REFRESH_TIMEOUT_MS); past it the stored CR is served. */
  refreshTimeoutMs?: number;
  /** Budget of a diff or a merge preview (SVC_DIFF_TIMEOUT_MS); past it 504. */
  diffTimeoutMs?: number;
  /** Longest wait for the per-base merge lock (SVC_MERGE_LOCK_WAIT_MS). */
  lockWaitMs?: number;
  /** Diff limits (SVC_DIFF_MAX_*). */
  diffLimits?: DiffLimits;
  /**
   * Told after a merge is recorded (the manifest feature re-syncs svc.toml when the base is
   * the default branch). Must not throw: the merge already happened.
   */
  onMerged?: (project: ProjectRecord, cr: ChangeRequest) => Promise<void>;
}

const TIMED_OUT = Symbol('timed out');

/** `p`'s value, or TIMED_OUT once `ms` passed (p keeps running; its failure is then ignored here). */
export async function within<T>(p: Promise<T>, ms: number): Promise<T | typeof TIMED_OUT> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<typeof TIMED_OUT>((r) => (timer = setTimeout(() => r(TIMED_OUT), ms)));
  try {
    return await Promise.race([p, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** A git read bounded by the diff budget: 504 with the contract's body past it. */
async function bounded<T>(deps: CrDeps, what: string, p: Promise<T>): Promise<T> {
  p.catch(() => {}); // a failure after the budget is nobody's to handle
  const ms = deps.diffTimeoutMs ?? 30_000;
  const r = await within(p, ms);
  if (r === TIMED_OUT) {
    throw new DomainError('timeout', 'Repository timeout', `The repository did not answer the ${what} within ${ms} ms; try again.`, { timeout_ms: ms });
  }
  return r;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** `:crId` is the uuid or the per-project number (`3`, `#3`). */
export async function findCr(db: Db, projectId: string, ref: string): Promise<ChangeRequest> {
  const num = crNumberOf(ref);
  let row: Record<string, unknown> | undefined;
  if (num !== null) row = (await db.one<{ cr: Record<string, unknown> }>(crQueries.byNumber(projectId, num)))?.cr;
  else if (UUID.test(ref)) row = await db.one(crQueries.byId(projectId, ref.toLowerCase()));
  if (!row) throw notFound('Change request');
  return crOfRow(decodeCrRow(row));
}

export interface CrPage {
  change_requests: ChangeRequest[];
  /** Opaque; null on the last page. */
  next_cursor: string | null;
}

/** Cursors are opaque to clients: base64url of the last number served. */
const encodeCursor = (number: number) => Buffer.from(JSON.stringify({ b: number })).toString('base64url');
function decodeCursor(cursor: string): number {
  try {
    const v = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as { b?: unknown };
    if (typeof v.b === 'number' && Number.isInteger(v.b) && v.b > 0 && v.b <= 2_147_483_647) return v.b;
  } catch {
    /* below */
  }
  throw validationError('cursor is not one this server gave out; start again without it.', [{ path: 'cursor', message: 'invalid cursor' }]);
}

/**
 * One page of a project's CRs, newest first (cursor pagination: `number` below the
 * cursor's). Reads of open CRs refresh, the list too: one tips read of every branch the
 * page's open CRs name (one `ls-remote`), then one statement appending a `Refreshed`
 * event for each CR whose SHAs moved, all within the read budget (past it the stored
 * page is served and the refresh lands in the background).
 */
export async function listCrPage(
  deps: CrDeps,
  project: ProjectRecord,
  status: CrStatus | 'all',
  page: { perPage: number; cursor?: string | undefined },
  actor: string,
): Promise<CrPage> {
  const before = page.cursor ? decodeCursor(page.cursor) : null;
  const rows = (await deps.db.rows(crQueries.list(project.project_id, status === 'all' ? null : status, page.perPage + 1, before))).map(decodeCrRow);
  const more = rows.length > page.perPage;
  const shown = more ? rows.slice(0, page.perPage) : rows;
  const refreshed = await refreshMany(deps, project, shown, actor);
  const items = shown.map((r) => crOfRow(refreshed.get(r.cr_id) ?? r));
  return { change_requests: items, next_cursor: more ? encodeCursor(shown[shown.length - 1]!.number) : null };
}

async function refreshMany(deps: CrDeps, project: ProjectRecord, rows: CrRow[], actor: string): Promise<Map<string, CrRow>> {
  const open = rows.filter((r) => r.status === 'open');
  if (open.length === 0 || !project.repo_url) return new Map();
  const refs = [...new Set(open.flatMap((r) => [r.base_ref, r.head_ref]))];
  const read = (async () => deps.repos.for(project).readTips(refs))();
  let tips: Record<string, string | null> | typeof TIMED_OUT;
  try {
    tips = await within(read, deps.refreshTimeoutMs ?? 1500);
  } catch (err) {
    deps.logger.debug({ project_id: project.project_id, err: (err as Error).message }, 'list refresh skipped');
    return new Map();
  }
  if (tips === TIMED_OUT) {
    read
      .then((late) => applyManyTips(deps, project, open, late, actor))
      .catch((err: unknown) => deps.logger.debug({ err: (err as Error).message }, 'background list refresh skipped'));
    return new Map();
  }
  return applyManyTips(deps, project, open, tips, actor);
}

async function applyManyTips(
  deps: CrDeps,
  project: ProjectRecord,
  open: CrRow[],
  tips: Record<string, string | null>,
  actor: string,
): Promise<Map<string, CrRow>> {
  const moved = open.filter((row) => {
    const head = tips[row.head_ref] ?? null;
    const base = tips[row.base_ref] ?? null;
    return head && base && (head !== row.head_commit_sha || base !== row.base_commit_sha);
  });
  if (moved.length === 0) return new Map();
  // One statement for the page (a batch already: not group-committed). A stream that moved
  // meanwhile was skipped: its stored row is served, the next read refreshes it.
  const done = await handleMany(
    moved.map((row) => ({
      stream: crStream(project.project_id, row.cr_id),
      row,
      command: () => ({ type: 'RefreshChangeRequest' as const, data: { head_commit_sha: tips[row.head_ref]!, base_commit_sha: tips[row.base_ref]! }, meta: { actor, now: now(deps) } }),
    })),
    changeRequestDecider,
    crProjection,
    pgStore(deps.db),
  );
  return new Map(done.flatMap((d) => (d ? [[d.state!.cr_id, toRow(d.state!, d.version)] as const] : [])));
}

const now = (deps: Pick<CrDeps, 'now'>) => nowOf(deps);

export interface OpenInput {
  title: string;
  description?: string;
  head_ref: string;
  base_ref?: string;
  session_id?: string;
  metadata?: Record<string, unknown>;
}

/** Tips of both branches, or nulls when the repository cannot be read right now. */
async function tipsOrNull(repo: ProjectRepo, base: string, head: string, log: Logger) {
  try {
    const t = await repo.readTips([base, head]);
    return { reachable: true, base: t[base] ?? null, head: t[head] ?? null };
  } catch (err) {
    if (isDomainError(err) && err.code === 'unavailable') {
      log.warn({ err: err.message }, 'repository unreachable; CR anchored without SHAs');
      return { reachable: false, base: null, head: null };
    }
    throw err;
  }
}

/**
 * `via`: the session whose agent acts for `actor` (an agent-grade credential), recorded in
 * the events' metadata so the history says "the agent of session …, for …".
 */
export async function openCr(
  deps: Pick<CrDeps, 'db' | 'repos' | 'logger' | 'now'>,
  project: ProjectRecord,
  actor: string,
  input: OpenInput,
  via: string | null = null,
): Promise<ChangeRequest> {
  const base = input.base_ref ?? project.default_branch;
  const crId = randomUUID();
  const fields = {
    cr_id: crId,
    account_id: project.account_id,
    project_id: project.project_id,
    title: input.title,
    description: input.description ?? '',
    base_ref: base,
    head_ref: input.head_ref,
    head_commit_sha: null,
    base_commit_sha: null,
    origin_session_id: null,
    metadata: input.metadata ?? {},
  };
  // Validate before touching git or allocating a number.
  assertCanOpen(fields);
  const tips = await tipsOrNull(deps.repos.for(project), base, input.head_ref, deps.logger);
  if (tips.reachable && tips.head === null) {
    throw validationError(`head_ref '${input.head_ref}' does not exist in the repository; push it first.`, [
      { path: 'head_ref', message: 'branch not found' },
    ]);
  }
  if (tips.reachable && tips.base === null) {
    throw validationError(`base_ref '${base}' does not exist in the repository.`, [{ path: 'base_ref', message: 'branch not found' }]);
  }
  return deps.db.transaction(async (tx) => {
    const known = input.session_id ? await tx.one(projectQueries.sessionInProject(project.project_id, input.session_id)) : undefined;
    const { number } = (await tx.one<{ number: number }>(crQueries.nextNumber(project.project_id)))!;
    await tx.run(crQueries.lockStacks(project.project_id));
    const stack = await tx.rows<StackNode>(crQueries.stackNodes(project.project_id));
    const data = {
      ...fields,
      number,
      head_commit_sha: tips.head,
      base_commit_sha: tips.base,
      origin_session_id: known ? input.session_id! : null,
    };
    return (await openInTx(tx, project.project_id, crId, { type: 'OpenChangeRequest', data, stack, meta: { actor, now: now(deps), session_id: via } })).cr;
  });
}

/**
 * An open CR follows its branches: every read re-resolves both tips and records a
 * `Refreshed` event when either moved. A missing branch or an unreachable repository
 * skips the refresh silently; the stored metadata is served. The read has a budget
 * (`refreshTimeoutMs`): past it the stored CR is served at once and the refresh goes on
 * in the background, recording its `Refreshed` event if it lands.
 */
export async function refreshCr(deps: CrDeps, project: ProjectRecord, cr: ChangeRequest, actor: string): Promise<ChangeRequest> {
  if (cr.status !== 'open' || !project.repo_url) return cr;
  const read = (async () => deps.repos.for(project).readTips([cr.base_ref, cr.head_ref]))();
  let tips: Record<string, string | null> | typeof TIMED_OUT;
  try {
    tips = await within(read, deps.refreshTimeoutMs ?? 1500);
  } catch (err) {
    // Whatever the reason, a refresh failure serves the stored metadata (the spec's rule).
    deps.logger.debug({ cr_id: cr.cr_id, err: (err as Error).message }, 'refresh skipped');
    return cr;
  }
  if (tips === TIMED_OUT) {
    deps.logger.debug({ cr_id: cr.cr_id }, 'refresh over budget; serving the stored CR');
    read
      .then((late) => applyTips(deps, project, cr, late, actor))
      .catch((err: unknown) => deps.logger.debug({ cr_id: cr.cr_id, err: (err as Error).message }, 'background refresh skipped'));
    return cr;
  }
  return applyTips(deps, project, cr, tips, actor);
}

/** Records a `Refreshed` event when the tips moved from those `cr` holds. */
export async function applyTips(
  deps: CrDeps,
  project: ProjectRecord,
  cr: ChangeRequest,
  tips: Record<string, string | null>,
  actor: string,
): Promise<ChangeRequest> {
  const head = tips[cr.head_ref] ?? null;
  const base = tips[cr.base_ref] ?? null;
  if (!head || !base || (head === cr.head_commit_sha && base === cr.base_commit_sha)) return cr;
  // Tips read before the row changed (another reader refreshed, or anything else) are not
  // written over it: the next read refreshes from newer tips.
  const { cr: next } = await handleCommand(deps, project.project_id, cr.cr_id, (fresh) => fresh.updated_at !== cr.updated_at ? null : ({
    type: 'RefreshChangeRequest',
    data: { head_commit_sha: head, base_commit_sha: base },
    meta: { actor, now: now(deps) },
  }));
  return next;
}

export async function getCr(
  deps: CrDeps,
  project: ProjectRecord,
  ref: string,
  actor: string,
  /** `found`: the CR already read for this request (null: read, none with that reference). */
  opts: { asOf?: Date; found?: ChangeRequest | null } = {},
): Promise<ChangeRequest> {
  if (opts.found === null) throw notFound('Change request');
  const cr = opts.found ?? (await findCr(deps.db, project.project_id, ref));
  if (opts.asOf) {
    const events = await readStream(deps.db, streamIdOf(cr.cr_id), { asOf: opts.asOf });
    const state = fold(events.map(parseChangeRequestEvent));
    if (!state) throw notFound('Change request (at that time)');
    return state;
  }
  return refreshCr(deps, project, cr, actor);
}

export async function editCr(
  deps: CrDeps,
  project: ProjectRecord,
  ref: string,
  actor: string,
  data: { title?: string; description?: string },
  via: string | null = null,
): Promise<ChangeRequest> {
  const cr = await findCr(deps.db, project.project_id, ref);
  return (await handleCommand(deps, project.project_id, cr.cr_id, () => ({ type: 'EditChangeRequest', data, meta: { actor, now: now(deps), session_id: via } }))).cr;
}

export async function closeCr(deps: CrDeps, project: ProjectRecord, ref: string, actor: string, via: string | null = null): Promise<ChangeRequest> {
  const cr = await findCr(deps.db, project.project_id, ref);
  // Under the merge lock: a close never lands between a merge's push and its record.
  return withMergeLock(deps, project.project_id, cr.base_ref, async (db) =>
    (await handleCommand({ ...deps, db }, project.project_id, cr.cr_id, () => ({ type: 'CloseChangeRequest', meta: { actor, now: now(deps), session_id: via } }))).cr,
  );
}

export async function reopenCr(deps: CrDeps, project: ProjectRecord, ref: string, actor: string, via: string | null = null): Promise<ChangeRequest> {
  const cr = await findCr(deps.db, project.project_id, ref);
  // Under the merge lock, like close: a reopen is decided on the CR's state after any merge
  // in progress has been recorded, never between a merge's push and its record.
  return withMergeLock(deps, project.project_id, cr.base_ref, async (db) =>
    (await handleCommand({ ...deps, db }, project.project_id, cr.cr_id, () => ({ type: 'ReopenChangeRequest', meta: { actor, now: now(deps), session_id: via } }))).cr,
  );
}

/**
 * Open and closed CRs: the live three-dot diff base...head. Merged CRs: the diff between
 * the SHAs captured at merge, so it still renders after the branches move on.
 */
export async function diffCr(deps: CrDeps, project: ProjectRecord, ref: string): Promise<LimitedDiff> {
  return diffOfCr(deps, project, await findCr(deps.db, project.project_id, ref));
}

/** `diffCr` of a CR the caller already read (the dashboard's CR page reads it once). */
export async function diffOfCr(deps: CrDeps, project: ProjectRecord, cr: ChangeRequest): Promise<LimitedDiff> {
  return limitDiff(await rawDiffCr(deps, project, cr), deps.diffLimits ?? DEFAULT_DIFF_LIMITS);
}

async function rawDiffCr(deps: CrDeps, project: ProjectRecord, cr: ChangeRequest): Promise<DiffResult> {
  const repo = deps.repos.for(project);
  if (cr.status === 'merged' && cr.base_commit_sha && cr.head_commit_sha) {
    return bounded(deps, 'diff', repo.diffCommits(cr.base_commit_sha, cr.head_commit_sha));
  }
  try {
    return await bounded(deps, 'diff', repo.diffBranches(cr.base_ref, cr.head_ref));
  } catch (err) {
    // A deleted branch: the last tips we saw still describe the change.
    if (isDomainError(err) && err.code === 'not_found' && cr.base_commit_sha && cr.head_commit_sha) {
      return bounded(deps, 'diff', repo.diffCommits(cr.base_commit_sha, cr.head_commit_sha));
    }
    throw err;
  }
}

export async function previewCr(deps: CrDeps, project: ProjectRecord, ref: string): Promise<MergePreview> {
  return previewOfCr(deps, project, await findCr(deps.db, project.project_id, ref));
}

/** `previewCr` of a CR the caller already read. */
export async function previewOfCr(deps: CrDeps, project: ProjectRecord, cr: ChangeRequest): Promise<MergePreview> {
  return bounded(deps, 'merge preview', deps.repos.for(project).preview(cr.base_ref, cr.head_ref));
}

/**
 * Two live branches compared before any CR exists: the merge preview of `head` into `base`
 * (the project's default branch when not given). Names are checked before git runs; a
 * missing branch is a 404 naming it.
 */
export async function compareBranches(deps: CrDeps, project: ProjectRecord, head: string, base?: string) {
  const baseRef = assertBranchName(base ?? project.default_branch, 'base');
  const headRef = assertBranchName(head, 'head');
  const preview = await bounded(deps, 'comparison', deps.repos.for(project).preview(baseRef, headRef));
  return { base_ref: baseRef, head_ref: headRef, ...preview };
}

export async function crHistory(deps: CrDeps, project: ProjectRecord, ref: string) {
  return historyOfCr(deps, await findCr(deps.db, project.project_id, ref));
}

export type CrHistoryEntry = Awaited<ReturnType<typeof historyOfCr>>[number];

interface HistoryRow {
  stream_position: number | string;
  global_position: number | string;
  type: string;
  data: Record<string, unknown>;
  metadata: EventMetadata;
  recorded_at: Date | string;
  actor_name: string | null;
}

/** `crHistory` of a CR the caller already read. */
export async function historyOfCr(deps: Pick<CrDeps, 'db'>, cr: ChangeRequest) {
  const events = await deps.db.rows<HistoryRow>(crQueries.history(streamIdOf(cr.cr_id)));
  return events.map((e) => ({
    stream_position: Number(e.stream_position),
    global_position: Number(e.global_position),
    type: e.type,
    data: e.data,
    actor: e.metadata.actor,
    /** The person (their name, else their email); null for a system actor or a removed user. */
    actor_name: e.actor_name,
    /** Set when the person's agent acted: the session it ran in. */
    session_id: e.metadata.session_id ?? null,
    recorded_at: new Date(e.recorded_at).toISOString(),
  }));
}
