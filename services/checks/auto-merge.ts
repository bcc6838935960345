import { DomainError } from '../../domain/errors.js';
import { assertCanMerge, type AutoMerge, type ChangeRequest } from '../../domain/change-request/index.js';
import type { ProjectRecord } from '../../domain/project.js';
import { headModified, mergeFailed } from '../../infra/git/errors.js';
import { findCr, previewOfCr, refreshCr } from '../change-requests/service.js';
import { checksInForce, requiresSomething, type ChecksInForce } from './config.js';
import type { ChecksDeps } from './deps.js';
import { syncChecks } from './schedule.js';
import { appendCheckEvents, readCrChecks } from './stream.js';
import { nowOf } from '../../lib/clock.js';

export const noRequiredChecks = (): DomainError =>
  new DomainError(
    'no_required_checks',
    'No required checks',
    'Nothing would have to pass: svc.toml on the default branch names no [[checks]] and no [review] required_statuses. Merge directly instead.',
  );

/**
 * `POST .../merge {"when":"checks_pass"}`: a person asks the server to merge once the
 * checks pass. Refused at once when the CR is not open or conflicts (409), when the head
 * moved from `expected_head_sha` (409), or when nothing is required (422). Bound to the
 * head as it is now: a later push cancels it (syncChecks), so nothing merges that the
 * person did not see.
 */
export async function requestAutoMerge(
  deps: ChecksDeps,
  project: ProjectRecord,
  ref: string,
  actor: string,
  body: { expected_head_sha?: string | undefined },
): Promise<AutoMerge> {
  const { cr, config, head } = await readyWhenGreen(deps, project, ref, actor, body);
  await appendCheckEvents(deps, project.project_id, cr.cr_id, actor, (s) => {
    const a = s.checks.auto_merge;
    if (a?.status === 'pending' && a.head_sha === head && a.requested_by === actor) return [];
    return [{ type: 'ChangeRequestAutoMergeRequested', data: { requested_by: actor, head_sha: head, requested_at: nowOf(deps).toISOString() } }];
  });
  // Queue what is missing and merge if all is green already; a failure here leaves the
  // request pending for the refresher.
  await syncChecks(deps, project, cr.cr_id, config).catch((err: Error) => deps.logger.warn({ cr_id: cr.cr_id, err: err.message }, 'checks not synced after merge-when-green'));
  const after = await readCrChecks(deps, cr.cr_id);
  return after.checks.auto_merge!;
}

/**
 * What merge when green asks before it is accepted, into the CR's own auto-merge or the
 * merge queue alike: the CR is open (409), something is required (422), its head is the
 * one the person saw (409) and it merges cleanly onto the base now (409).
 */
export async function readyWhenGreen(deps: ChecksDeps, project: ProjectRecord, ref: string, actor: string, body: { expected_head_sha?: string | undefined }): Promise<{ cr: ChangeRequest; config: ChecksInForce; head: string; base: string }> {
  const found = await findCr(deps.db, project.project_id, ref);
  assertCanMerge(found);
  const config = await checksInForce(deps.db, project.project_id);
  if (!requiresSomething(config)) throw noRequiredChecks();
  const cr = await refreshCr(deps, project, found, actor);
  const head = cr.head_commit_sha;
  const base = cr.base_commit_sha;
  if (!head || !base) throw new DomainError('unavailable', 'Repository unavailable', 'The branch tips could not be read; try again.');
  if (body.expected_head_sha !== undefined && body.expected_head_sha !== head) throw headModified(body.expected_head_sha, head);
  const preview = await previewOfCr(deps, project, cr);
  if (preview.head_sha !== head) throw headModified(head, preview.head_sha);
  if (!preview.can_merge && !preview.is_up_to_date) throw mergeFailed(preview.conflicts);
  return { cr, config, head, base };
}
