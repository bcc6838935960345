import type { Db } from '../../infra/db/db.js';
import type { Logger } from '../../lib/logger.js';
import type { ProjectRecord } from '../../domain/project.js';
import { manifestQueries } from '../../sql/queries/manifest.js';

/** Why a sync was asked for when the default branch moved without a merge of ours. */
export type MoveReason = 'push' | 'moved outside';

/** Projects whose last seen default tip is remembered; past it the oldest is forgotten (it is only a shortcut). */
const REMEMBERED = 10_000;

/**
 * The manifest in force follows the default branch wherever it moves: a push to a managed
 * repository, or a remote's (or `file://`) branch moved outside svc. Every read of branch
 * tips passes here (infra/git/project-repos.ts); a default tip not seen before that differs
 * from the commit the manifest in force was read at asks for one sync of that tip (the job
 * is idempotent: `syncIfMoved`). A tip already seen costs one map lookup: this sits on the
 * open-CR read's path.
 */
export function createManifestFollower(deps: {
  db: Pick<Db, 'one'>;
  logger: Logger;
  /** Queues one `manifest.sync` for `sha` (the queue dedupes a tip asked for twice). */
  enqueue: (projectId: string, sha: string, reason: MoveReason) => Promise<void>;
}): { tipsRead(project: ProjectRecord, tips: Record<string, string | null>, reason?: MoveReason): void } {
  const seen = new Map<string, string>();
  const remember = (projectId: string, sha: string) => {
    seen.delete(projectId);
    seen.set(projectId, sha);
    if (seen.size > REMEMBERED) seen.delete(seen.keys().next().value!);
  };
  const check = async (project: ProjectRecord, sha: string, reason: MoveReason) => {
    const row = await deps.db.one<{ source_sha: string | null }>(manifestQueries.get(project.project_id));
    if (row?.source_sha === sha) return;
    await deps.enqueue(project.project_id, sha, reason);
  };
  return {
    tipsRead(project, tips, reason = project.repo_managed ? 'push' : 'moved outside') {
      const sha = tips[project.default_branch];
      if (!sha || seen.get(project.project_id) === sha) return;
      remember(project.project_id, sha);
      check(project, sha, reason).catch((err: Error) => {
        // Forget it, so the next read tries again.
        if (seen.get(project.project_id) === sha) seen.delete(project.project_id);
        deps.logger.warn({ project_id: project.project_id, err: err.message }, 'manifest sync for a moved default branch not queued');
      });
    },
  };
}
