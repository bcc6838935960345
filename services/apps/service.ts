import type { Db, Executor } from '../../infra/db/db.js';
import { SLUG } from '../../domain/manifest/schema.js';
import { appQueries, type AppRow } from '../../sql/queries/apps.js';
import { appLabel, projectIdRange } from './origin.js';

export type { AppRow };

/** Reads of a project's apps for the API (apps themselves follow `[[apps]]`: `sync.ts`, `deploy.ts`). */

/** The project's apps that are still in its manifest, by name. */
export async function listApps(db: Executor, projectId: string): Promise<AppRow[]> {
  return db.rows<AppRow>(appQueries.list(projectId));
}

/** The app's latest `limit` deploys. */
export async function appDeploys(db: Executor, projectId: string, name: string, limit: number): Promise<Record<string, unknown>[]> {
  return db.rows<Record<string, unknown>>(appQueries.deploys(projectId, name, limit));
}

/**
 * One app and its latest `limit` deploys from one snapshot: a deploy's outcome and the
 * app's status and error are written in one transaction, so a reader never sees a failed
 * deploy beside the app's state from before it. Undefined for no such app.
 */
export async function getAppWithDeploys(db: Db, projectId: string, name: string, limit: number): Promise<{ app: AppRow; deploys: Record<string, unknown>[] } | undefined> {
  if (!SLUG.test(name)) return undefined;
  return db.transaction(
    async (tx) => {
      const app = await tx.one<AppRow>(appQueries.get(projectId, name));
      return app ? { app, deploys: await appDeploys(tx, projectId, app.name, limit) } : undefined;
    },
    { isolation: 'repeatable read' },
  );
}

/** The live app an app host's label names (services/apps/origin.ts), or undefined. */
export async function appOfLabel(db: Executor, label: string, projectHex: string): Promise<AppRow | undefined> {
  const [lo, hi] = projectIdRange(projectHex);
  const rows = await db.rows<AppRow>(appQueries.servedInRange(lo, hi));
  return rows.find((a) => appLabel(a.name, a.project_id) === label);
}
