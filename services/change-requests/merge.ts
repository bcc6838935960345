import { DomainError, isDomainError, notFound } from '../../domain/errors.js';
import { assertCanMerge, type ChangeRequest } from '../../domain/change-request/index.js';
import { defaultMergeMessage, type MergeResult, type ProjectRepo } from '../../infra/git/port.js';
import { failpoint } from '../../lib/failpoints.js';
import { step } from '../../lib/step-trace.js';
import { withMergeLock } from './merge-lock.js';
import { mergeAttemptQueries as attempts, type MergeAttemptRow } from '../../sql/queries/merge-attempts.js';
import { projectQueries } from '../../sql/queries/projects.js';
import { handleCommand } from './handle.js';
import type { ProjectRecord } from '../../domain/project.js';
import { findCr, type CrDeps } from './service.js';
import { settleQuietly } from './stack.js';
import { nowOf } from '../../lib/clock.js';

/**
 * The push's outcome is unknown: the merge record is kept and the job must be retried
 * (workers/cr-merge.ts rethrows it so pg-boss does); a retry settles it.
 */
export class MergeOutcomeUnknown extends DomainError {
  constructor(
    readonly crId: string,
    readonly causeError: unknown,
  ) {
    super(
      'unavailable',
      'Merge outcome unknown',
      'The repository did not confirm the merge; it is settled when the repository answers again. Check the change request shortly.',
      { retry_after: 5 },
    );
  }
}

/** Errors after which the base certainly did not move: a refusal by the remote, a stale lease, a policy refusal. */
function definitelyNotPublished(err: unknown): boolean {
  if (!isDomainError(err)) return false;
  if (err.code === 'concurrency' || err.code === 'validation') return true;
  return err.code === 'unavailable' && err.reason === 'Push rejected';
}

/** The queue that runs merges (`workers/cr-merge.ts`); the API enqueues on it. */
export const CR_MERGE = 'cr.merge';

export interface MergeJobData {
  project_id: string;
  cr_id: string;
  actor: string;
  message?: string;
  expected_head_sha?: string;
  /** Merge-when-green: only onto the base its checks ran against (services/checks). */
  expected_base_sha?: string;
}

/**
 * The merge workflow, run by the `cr.merge` worker. One merge at a time per project and
 * base branch (an advisory lock). The computed merge is recorded before the remote base
 * moves; if the process dies after the move and before `ChangeRequestMerged` is appended,
 * the retried job finds the record, sees the base already holds the merge, and records
 * it once.
 */
export async function runMerge(deps: CrDeps, job: MergeJobData, loaded?: MergeContext): Promise<ChangeRequest> {
  const known = loaded && loaded.project.project_id === job.project_id && loaded.cr.cr_id === job.cr_id ? loaded : undefined;
  const project = known?.project ?? (await deps.db.one<ProjectRecord>(projectQueries.byId(job.project_id)));
  if (!project) throw notFound('Project');
  const first = known?.cr ?? (await findCr(deps.db, project.project_id, job.cr_id));
  assertCanMerge(first);
  const repo = deps.repos.for(project);
  step('job: load project, CR');
  const cr = await withMergeLock(deps, project.project_id, first.base_ref, async (db) => {
    step('lock');
    const locked: CrDeps = { ...deps, db };
    // Re-read under the lock: a close that committed meanwhile wins, and nothing merges.
    const cr = await findCr(db, project.project_id, job.cr_id);
    assertCanMerge(cr);
    step('re-read CR');
    const recovered = await recoverPublished(locked, project, cr);
    if (recovered) return recovered;
    step('attempt check');

    let result: MergeResult | undefined;
    for (let attempt = 1; !result; attempt++) {
      let recorded = false;
      try {
        result = await repo.merge(
          {
            base_ref: cr.base_ref,
            head_ref: cr.head_ref,
            message: mergeMessageOf(cr, job.message),
            ...(job.expected_head_sha ? { expected_head_sha: job.expected_head_sha } : {}),
            ...(job.expected_base_sha ? { expected_base_sha: job.expected_base_sha } : {}),
          },
          {
            beforePublish: async (r) => {
              await db.run(
                attempts.save({
                  cr_id: cr.cr_id,
                  project_id: project.project_id,
                  strategy: r.kind,
                  base_commit_sha: r.base_sha,
                  head_commit_sha: r.head_sha,
                  merge_commit_sha: r.merge_commit_sha,
                  actor: job.actor,
                }),
              );
              recorded = true;
              step('record attempt');
            },
            notPublished: async () => {
              await db.run(attempts.remove(cr.cr_id));
              recorded = false;
            },
          },
        );
      } catch (err) {
        // The base moved between computing and publishing: nothing was overwritten; recompute.
        if (isDomainError(err) && err.code === 'concurrency' && attempt < 3) continue;
        if (!recorded || definitelyNotPublished(err)) {
          await db.run(attempts.remove(cr.cr_id));
          throw err;
        }
        // The push may have moved the base (killed by its timeout, its answer lost): the
        // record stays for the retry and the start-up reconcile, which compare the base
        // with the recorded merge commit.
        deps.logger.warn({ cr_id: cr.cr_id, err: (err as Error).message }, 'merge outcome unknown; the record stays for the retry');
        throw new MergeOutcomeUnknown(cr.cr_id, err);
      }
    }
    failpoint('merge.after-publish');
    step('publish');
    const done = await recordMerged(locked, project, cr.cr_id, job.actor, {
      strategy: result.kind,
      base_commit_sha: result.base_sha,
      head_commit_sha: result.head_sha,
      merge_commit_sha: result.merge_commit_sha,
    });
    return done;
  });
  // Every way out of the lock but a throw is a merged CR. Its stack follows before the
  // answer (the next CR of a stack merge bases on what this one merged into).
  await settleQuietly(deps, project, cr);
  afterMerge(deps, project, cr);
  return cr;
}


/** A merge's commit message: the person's, else the default. The direct merge and the queue's speculative results share it. */
export const mergeMessageOf = (cr: Pick<ChangeRequest, 'number' | 'title'>, message?: string): string => message ?? defaultMergeMessage(cr.number, cr.title);

/**
 * The commit a merge of `headSha` into `baseSha` puts on the base, made now without moving
 * any ref: the same engine call `repo.merge` makes (the engine's `createMerge`: fast-forward
 * when the head is strictly ahead, else a merge commit by the system identity), with the
 * same message. The merge queue builds its speculative results with it and later moves the
 * base to exactly the commit it checked.
 */
export function buildMergeCommit(repo: ProjectRepo, cr: Pick<ChangeRequest, 'number' | 'title'>, baseSha: string, headSha: string, message?: string): Promise<MergeResult> {
  return repo.computeMerge(baseSha, headSha, mergeMessageOf(cr, message));
}

/**
 * What the caller already read when it runs the merge in its own process (the API read
 * both to authorise the request): saves reading them again. The CR is read again under
 * the lock all the same; a durable job never carries these, only ids.
 */
export interface MergeContext {
  project: ProjectRecord;
  cr: ChangeRequest;
}

/**
 * The after-merge hook (a manifest re-sync), once the lock is released and without
 * holding up the answer: it must not fail the merge, and a process that dies before it
 * ran loses nothing (every project is re-synced when a worker starts).
 */
export function afterMerge(deps: CrDeps, project: ProjectRecord, cr: ChangeRequest): void {
  if (!deps.onMerged) return;
  void deps.onMerged(project, cr).catch((err: Error) => deps.logger.warn({ cr_id: cr.cr_id, err: err.message }, 'after-merge hook failed'));
}


async function recordMerged(
  deps: CrDeps,
  project: ProjectRecord,
  crId: string,
  actor: string,
  data: Pick<MergeAttemptRow, 'strategy' | 'base_commit_sha' | 'head_commit_sha' | 'merge_commit_sha'>,
): Promise<ChangeRequest> {
  // One statement appends the event and projects the row (no explicit transaction); the
  // attempt record is dropped after it. One left behind by a crash in between belongs to a
  // merged CR, which never merges again, and the next reconcile drops it.
  const { cr } = await handleCommand(deps, project.project_id, crId, () => ({
    type: 'MergeChangeRequest',
    data,
    meta: { actor, now: nowOf(deps) },
  }));
  step('append + project');
  await deps.db.run(attempts.remove(crId));
  step('drop attempt');
  return cr;
}

/** A previous run published this CR's merge but died before recording it: record it now. */
async function recoverPublished(deps: CrDeps, project: ProjectRecord, cr: ChangeRequest): Promise<ChangeRequest | null> {
  const attempt = await deps.db.one<MergeAttemptRow>(attempts.get(cr.cr_id));
  if (!attempt) return null;
  // Published means the recorded merge commit is in the base's history now, however far
  // the base has moved since (other merges, direct pushes).
  const published = await deps.repos.for(project).branchContains(cr.base_ref, attempt.merge_commit_sha);
  if (!published) {
    await deps.db.run(attempts.remove(cr.cr_id));
    return null;
  }
  deps.logger.warn({ cr_id: cr.cr_id, merge_commit_sha: attempt.merge_commit_sha }, 'recovered a merge published before a crash');
  return recordMerged(deps, project, cr.cr_id, attempt.actor, attempt);
}

/**
 * Run when a worker starts: a merge attempt left behind by a process that died mid-merge
 * is settled now, not when its job expires. Each is re-read under the same per-base lock
 * a live merge holds, so an attempt another worker is still publishing is left alone.
 */
export async function reconcileMergeAttempts(deps: CrDeps): Promise<number> {
  let settled = 0;
  for (const a of await deps.db.rows<MergeAttemptRow>(attempts.all())) {
    const project = await deps.db.one<ProjectRecord>(projectQueries.byId(a.project_id));
    if (!project) continue;
    const cr = await findCr(deps.db, project.project_id, a.cr_id).catch((err: unknown) => {
      if (isDomainError(err) && err.code === 'not_found') return null; // the CR went with its project
      throw err;
    });
    if (!cr) continue;
    try {
      await withMergeLock(deps, project.project_id, cr.base_ref, async (db) => {
        const fresh = await findCr(db, project.project_id, a.cr_id);
        if (fresh.status !== 'open') {
          await db.run(attempts.remove(a.cr_id));
          return;
        }
        if (await recoverPublished({ ...deps, db }, project, fresh)) settled++;
      });
    } catch (err) {
      deps.logger.warn({ cr_id: a.cr_id, err: (err as Error).message }, 'could not settle a merge attempt; its job will retry');
    }
  }
  return settled;
}

