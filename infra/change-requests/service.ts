import { randomUUID } from 'node:crypto';
import type { Db } from '../db/db.js';
import { readStream } from '../event-store.js';
import type { DiffResult, MergePreview, ProjectRepo } from '../git/port.js';
import type { Logger } from '../logger.js';
import { isDomainError, notFound, validationError } from '../../domain/errors.js';
import {
  decide,
  fold,
  parseChangeRequestEvent,
  streamIdOf,
  type ChangeRequest,
  type CrStatus,
} from '../../domain/change-request/index.js';
import { crQueries } from '../../sql/queries/change-requests.js';
import { projectQueries } from '../../sql/queries/projects.js';
import { fromRow } from './projection.js';
import { appendAndProject, handleCommand } from './handle.js';
import { withMergeLock } from './merge-lock.js';
import type { ProjectRecord, ProjectRepos } from './repos.js';

export interface CrDeps {
  db: Db;
  repos: ProjectRepos;
  logger: Logger;
  now?: () => Date;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** `:crId` is the uuid or the per-project number (`3`, `#3`). */
export async function findCr(db: Db, projectId: string, ref: string): Promise<ChangeRequest> {
  const num = /^#?([1-9][0-9]{0,9})$/.exec(ref);
  let row: Record<string, unknown> | undefined;
  if (num && Number(num[1]) <= 2_147_483_647) row = await db.one(crQueries.byNumber(projectId, Number(num[1])));
  else if (UUID.test(ref)) row = await db.one(crQueries.byId(projectId, ref.toLowerCase()));
  if (!row) throw notFound('Change request');
  const { stream_version: _v, ...cr } = fromRow(row);
  return cr;
}

export async function listCrs(db: Db, projectId: string, status: CrStatus | 'all', limit = 1000): Promise<ChangeRequest[]> {
  const rows = await db.rows(crQueries.list(projectId, status === 'all' ? null : status, limit));
  return rows.map((r) => {
    const { stream_version: _v, ...cr } = fromRow(r);
    return cr;
  });
}

const now = (deps: CrDeps) => (deps.now ? deps.now() : new Date());

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

export async function openCr(deps: CrDeps, project: ProjectRecord, actor: string, input: OpenInput): Promise<ChangeRequest> {
  const base = input.base_ref ?? project.default_branch;
  const crId = randomUUID();
  const probe = {
    cr_id: crId,
    account_id: project.account_id,
    project_id: project.project_id,
    number: 1,
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
  decide({ type: 'OpenChangeRequest', data: probe, meta: { actor, now: now(deps) } }, null);
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
    const data = {
      ...probe,
      number,
      head_commit_sha: tips.head,
      base_commit_sha: tips.base,
      origin_session_id: known ? input.session_id! : null,
    };
    const events = decide({ type: 'OpenChangeRequest', data, meta: { actor, now: now(deps) } }, null);
    return (await appendAndProject(tx, project.project_id, crId, 0, null, events, actor)).cr;
  });
}

/**
 * An open CR follows its branches: every read re-resolves both tips and records a
 * `Refreshed` event when either moved. A missing branch or an unreachable repository
 * skips the refresh silently; the stored metadata is served.
 */
export async function refreshCr(deps: CrDeps, project: ProjectRecord, cr: ChangeRequest, actor: string): Promise<ChangeRequest> {
  if (cr.status !== 'open' || !project.repo_url) return cr;
  let tips: Record<string, string | null>;
  try {
    tips = await deps.repos.for(project).readTips([cr.base_ref, cr.head_ref]);
  } catch (err) {
    // Whatever the reason, a refresh failure serves the stored metadata (the spec's rule).
    deps.logger.debug({ cr_id: cr.cr_id, err: (err as Error).message }, 'refresh skipped');
    return cr;
  }
  const head = tips[cr.head_ref] ?? null;
  const base = tips[cr.base_ref] ?? null;
  if (!head || !base || (head === cr.head_commit_sha && base === cr.base_commit_sha)) return cr;
  // Tips read before the row changed (another reader refreshed, or anything else) are not
  // written over it: the next read refreshes from newer tips.
  const { cr: next } = await handleCommand(deps.db, project.project_id, cr.cr_id, (fresh) => fresh.updated_at !== cr.updated_at ? null : ({
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
  opts: { asOf?: Date } = {},
): Promise<ChangeRequest> {
  const cr = await findCr(deps.db, project.project_id, ref);
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
): Promise<ChangeRequest> {
  const cr = await findCr(deps.db, project.project_id, ref);
  return (await handleCommand(deps.db, project.project_id, cr.cr_id, () => ({ type: 'EditChangeRequest', data, meta: { actor, now: now(deps) } }))).cr;
}

export async function closeCr(deps: CrDeps, project: ProjectRecord, ref: string, actor: string): Promise<ChangeRequest> {
  const cr = await findCr(deps.db, project.project_id, ref);
  // Under the merge lock: a close never lands between a merge's push and its record.
  return withMergeLock(deps, project.project_id, cr.base_ref, async (db) =>
    (await handleCommand(db, project.project_id, cr.cr_id, () => ({ type: 'CloseChangeRequest', meta: { actor, now: now(deps) } }))).cr,
  );
}

export async function reopenCr(deps: CrDeps, project: ProjectRecord, ref: string, actor: string): Promise<ChangeRequest> {
  const cr = await findCr(deps.db, project.project_id, ref);
  // Under the merge lock, like close: a reopen is decided on the CR's state after any merge
  // in progress has been recorded, never between a merge's push and its record.
  return withMergeLock(deps, project.project_id, cr.base_ref, async (db) =>
    (await handleCommand(db, project.project_id, cr.cr_id, () => ({ type: 'ReopenChangeRequest', meta: { actor, now: now(deps) } }))).cr,
  );
}

/**
 * Open and closed CRs: the live three-dot diff base...head. Merged CRs: the diff between
 * the SHAs captured at merge, so it still renders after the branches move on.
 */
export async function diffCr(deps: CrDeps, project: ProjectRecord, ref: string): Promise<DiffResult> {
  const cr = await findCr(deps.db, project.project_id, ref);
  const repo = deps.repos.for(project);
  if (cr.status === 'merged' && cr.base_commit_sha && cr.head_commit_sha) {
    return repo.diffCommits(cr.base_commit_sha, cr.head_commit_sha);
  }
  try {
    return await repo.diffBranches(cr.base_ref, cr.head_ref);
  } catch (err) {
    // A deleted branch: the last tips we saw still describe the change.
    if (isDomainError(err) && err.code === 'not_found' && cr.base_commit_sha && cr.head_commit_sha) {
      return repo.diffCommits(cr.base_commit_sha, cr.head_commit_sha);
    }
    throw err;
  }
}

export async function previewCr(deps: CrDeps, project: ProjectRecord, ref: string): Promise<MergePreview> {
  const cr = await findCr(deps.db, project.project_id, ref);
  return deps.repos.for(project).preview(cr.base_ref, cr.head_ref);
}

export async function crHistory(deps: CrDeps, project: ProjectRecord, ref: string) {
  const cr = await findCr(deps.db, project.project_id, ref);
  const events = await readStream(deps.db, streamIdOf(cr.cr_id));
  return events.map((e) => ({
    stream_position: e.stream_position,
    global_position: e.global_position,
    type: e.type,
    data: e.data,
    actor: e.metadata.actor,
    recorded_at: new Date(e.recorded_at).toISOString(),
  }));
}
