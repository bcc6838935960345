import type { ProjectRecord } from '../../domain/project.js';
import { checkQueries } from '../../sql/queries/checks.js';
import { projectQueries } from '../../sql/queries/projects.js';
import { applyTips, findCr } from '../change-requests/service.js';
import { checksInForce } from './config.js';
import type { ChecksDeps } from './deps.js';
import { CHECKS_ACTOR, syncChecks } from './schedule.js';

const BATCH = 5000;

/**
 * One pass of the checks refresher (workers/checks-refresher.ts runs it every
 * SVC_CHECKS_REFRESH_MS): the open CRs of projects whose manifest in force has checks or
 * required statuses re-read their branch tips, one read per project for all of them (one
 * ls-remote for a remote repository), record what moved (`ChangeRequestRefreshed`), and
 * have their checks synced: a new pair queues runs and cancels the old pair's, a new head
 * cancels merge-when-green, a green pair merges. Several workers are safe (every append is
 * decided on the stream at its version).
 */
export async function refreshAll(deps: ChecksDeps): Promise<void> {
  const rows = await deps.db.rows<{ project_id: string; cr_id: string }>(checkQueries.openCrsWithChecks(BATCH));
  const byProject = new Map<string, string[]>();
  for (const r of rows) byProject.set(r.project_id, [...(byProject.get(r.project_id) ?? []), r.cr_id]);
  for (const [projectId, crIds] of byProject) {
    const project = await deps.db.one<ProjectRecord>(projectQueries.byId(projectId));
    if (!project?.repo_url) continue;
    try {
      await refreshProject(deps, project, crIds);
    } catch (err) {
      deps.logger.debug({ project_id: projectId, err: (err as Error).message }, 'checks refresh of a project skipped');
    }
  }
}

async function refreshProject(deps: ChecksDeps, project: ProjectRecord, crIds: string[]): Promise<void> {
  const crs = await Promise.all(crIds.map((id) => findCr(deps.db, project.project_id, id)));
  const refs = [...new Set(crs.flatMap((c) => [c.base_ref, c.head_ref]))];
  const tips = await deps.repos.for(project).readTips(refs);
  const config = await checksInForce(deps.db, project.project_id);
  for (const cr of crs) {
    try {
      await applyTips(deps, project, cr, tips, CHECKS_ACTOR);
      await syncChecks(deps, project, cr.cr_id, config);
    } catch (err) {
      deps.logger.warn({ cr_id: cr.cr_id, err: (err as Error).message }, 'checks of a CR not synced');
    }
  }
}
