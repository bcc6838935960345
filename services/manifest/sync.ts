import type { Db } from '../../infra/db/db.js';
import type { Logger } from '../../lib/logger.js';
import type { ProjectRepos } from '../../infra/git/project-repos.js';
import type { ProjectRecord } from '../../domain/project.js';
import { isDomainError, notFound } from '../../domain/errors.js';
import { MANIFEST_PATH, parseManifest, type ManifestIssue } from '../../domain/manifest/parse.js';
import type { Manifest } from '../../domain/manifest/schema.js';
import { manifestQueries } from '../../sql/queries/manifest.js';
import { projectQueries } from '../../sql/queries/projects.js';
import { advisoryLockQueries } from '../../sql/queries/advisory-locks.js';
import { appendLog, SYSTEM_ACTOR } from './audit-log.js';
import { syncTriggers } from '../triggers/sync.js';
import { syncApps, type AppJob } from '../apps/sync.js';
import { nowOf } from '../../lib/clock.js';

export interface ManifestDeps {
  db: Db;
  repos: ProjectRepos;
  logger: Logger;
  /** Enqueues app deploys/stops decided by a sync (an `app.deploy` job). */
  enqueueApp: (job: AppJob) => Promise<void>;
  now?: () => Date;
}

export interface ManifestView {
  manifest: Manifest | null;
  source_sha: string | null;
  errors: ManifestIssue[];
  warnings: ManifestIssue[];
}

export interface SyncResult extends ManifestView {
  /** Whether this sync put a new manifest in force. */
  applied: boolean;
}

/**
 * Reads `svc.toml` at the tip of the default branch (no checkout) and puts it in force if
 * it is valid; an invalid one is reported (`errors`) and the previous one stays. Triggers
 * and apps follow the manifest in force. No file at all is a valid, empty manifest. Each
 * sync is an event with the commit it read.
 */
export async function syncManifest(deps: ManifestDeps, project: ProjectRecord, reason: string, opts: { onlyNewTip?: boolean } = {}): Promise<SyncResult> {
  const repo = deps.repos.for(project);
  const branch = project.default_branch;
  const sha = (await repo.readTips([branch]))[branch] ?? null;
  const bytes = sha ? await repo.readFileAt(sha, MANIFEST_PATH) : null;
  const parsed = bytes === null ? { manifest: parseManifest('').manifest, errors: [], warnings: [] } : parseManifest(bytes.toString('utf8'));
  const now = nowOf(deps);
  const jobs: AppJob[] = [];
  const result = await deps.db.transaction(async (tx) => {
    // One sync per project at a time: a slower, older one never lands after a newer one.
    await tx.run(advisoryLockQueries.xactLock(`manifest-sync-${project.project_id}`));
    // Decided under the lock: of two syncs of one new tip (a merge's and a read's), one records it.
    if (opts.onlyNewTip && sha && (await readManifest(tx, project.project_id))?.source_sha === sha) return null;
    if (parsed.manifest) {
      await tx.run(manifestQueries.saveValid({ projectId: project.project_id, manifest: parsed.manifest, sha, warnings: parsed.warnings }));
      await syncTriggers(tx, project.project_id, parsed.manifest.triggers, now);
      if (sha) jobs.push(...(await syncApps(tx, project.project_id, parsed.manifest.apps, sha)));
    } else {
      await tx.run(manifestQueries.saveInvalid({ projectId: project.project_id, sha: sha!, errors: parsed.errors, warnings: parsed.warnings }));
    }
    await appendLog(
      tx,
      'manifest',
      project.project_id,
      [
        {
          type: parsed.manifest ? 'ManifestSynced' : 'ManifestRejected',
          data: { commit_sha: sha, reason, file_present: bytes !== null, errors: parsed.errors, warnings: parsed.warnings.length },
        },
      ],
      SYSTEM_ACTOR,
    );
    return readManifest(tx, project.project_id);
  });
  if (result === null) return { ...(await readManifest(deps.db, project.project_id))!, applied: false };
  for (const job of jobs) await deps.enqueueApp(job);
  deps.logger.info({ project_id: project.project_id, sha, valid: !!parsed.manifest, errors: parsed.errors.length, reason }, 'manifest synced');
  return { ...result!, applied: !!parsed.manifest };
}

async function readManifest(db: Pick<Db, 'one'>, projectId: string): Promise<ManifestView | null> {
  const row = await db.one<{ manifest: Manifest | null; source_sha: string | null; errors: ManifestIssue[]; warnings: ManifestIssue[] }>(manifestQueries.get(projectId));
  if (!row) return null;
  return { manifest: row.manifest, source_sha: row.source_sha, errors: row.errors, warnings: row.warnings };
}

/** The manifest in force; synced on first read for a project never synced. */
export async function getManifest(deps: ManifestDeps, project: ProjectRecord): Promise<ManifestView> {
  const view = await readManifest(deps.db, project.project_id);
  if (view) return view;
  return syncManifest(deps, project, 'first-read');
}

/**
 * At worker start: a `manifest.sync` job for every project with a repository (jobs, not
 * inline reads, so an unreachable remote never holds up the start; pg-boss retries them).
 */
export async function enqueueAllManifestSyncs(db: Db, enqueue: (projectId: string) => Promise<void>): Promise<number> {
  const rows = await db.rows<{ project_id: string }>(manifestQueries.allProjects());
  for (const { project_id } of rows) await enqueue(project_id);
  return rows.length;
}

/**
 * A sync asked for because the default branch moved (`push`, `moved outside`): nothing when
 * the manifest in force was already read at the branch's current tip (another process, the
 * merge's own sync, or an earlier try got there first), so each new tip is synced once.
 */
export async function syncIfMoved(deps: ManifestDeps, projectId: string, reason: string): Promise<void> {
  await syncProjectById(deps, projectId, reason, { onlyNewTip: true });
}

export async function syncProjectById(deps: ManifestDeps, projectId: string, reason: string, opts: { onlyNewTip?: boolean } = {}): Promise<void> {
  const project = await deps.db.one<ProjectRecord>(projectQueries.byId(projectId));
  if (!project) throw notFound('Project');
  try {
    await syncManifest(deps, project, reason, opts);
  } catch (err) {
    if (isDomainError(err) && err.code === 'not_found') return; // the default branch is gone: nothing to read
    throw err;
  }
}
