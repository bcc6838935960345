import { validationError } from '../../domain/errors.js';
import { assertSha } from '../../domain/refs.js';
import type { ProjectRecord } from '../../domain/project.js';
import { checkQueries, type StatusRow } from '../../sql/queries/checks.js';
import { crQueries } from '../../sql/queries/change-requests.js';
import { checksInForce } from './config.js';
import type { ChecksDeps } from './deps.js';
import { evaluateSoon } from './schedule.js';

export interface StatusInput {
  context: string;
  state: 'pending' | 'success' | 'failure' | 'error';
  description?: string | null | undefined;
  target_url?: string | null | undefined;
}

/**
 * An outside CI's report on a commit (GitHub's commit status). People only (the agent gate
 * refuses agent credentials before this runs). A context may not take a check's name: a
 * check's result comes from its own run, never from a post. Open CRs whose head is this
 * commit evaluate merge-when-green at once (a failure cancels it, a last success merges).
 */
export async function postStatus(deps: ChecksDeps, project: ProjectRecord, sha: string, actor: string, input: StatusInput): Promise<StatusRow> {
  assertSha(sha, 'sha');
  const config = await checksInForce(deps.db, project.project_id);
  if (config.checks.some((c) => c.name === input.context)) {
    throw validationError(`context '${input.context}' is the name of a check in svc.toml; a check reports its own result.`, [
      { path: 'context', message: 'taken by a check' },
    ]);
  }
  const row = (await deps.db.one<StatusRow>(
    checkQueries.upsertStatus({
      projectId: project.project_id,
      sha,
      context: input.context,
      state: input.state,
      description: input.description ?? null,
      targetUrl: input.target_url ?? null,
      actor,
    }),
  ))!;
  const crs = await deps.db.rows<{ cr_id: string; head_commit_sha: string | null }>(crQueries.list(project.project_id, 'open', 1000));
  for (const cr of crs.filter((c) => c.head_commit_sha === sha)) {
    await evaluateSoon(deps, project, cr.cr_id, config).catch((err: Error) =>
      deps.logger.warn({ cr_id: cr.cr_id, err: err.message }, 'merge when green not evaluated after a status'),
    );
  }
  return row;
}
