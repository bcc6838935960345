import type { Executor } from '../../infra/db/db.js';
import { SLUG } from '../../domain/manifest/schema.js';
import { appQueries, type AppRow } from '../../sql/queries/apps.js';

/** Reads of a project's apps for the API (apps themselves follow `[[apps]]`: `sync.ts`, `deploy.ts`). */

/** The project's apps that are still in its manifest, by name. */
export async function listApps(db: Executor, projectId: string): Promise<AppRow[]> {
  return db.rows<AppRow>(appQueries.list(projectId));
}

/** One app by name; undefined for a name no app can have. */
export async function getApp(db: Executor, projectId: string, name: string): Promise<AppRow | undefined> {
  return SLUG.test(name) ? db.one<AppRow>(appQueries.get(projectId, name)) : undefined;
}

/** The app's latest `limit` deploys. */
export async function appDeploys(db: Executor, projectId: string, name: string, limit: number): Promise<Record<string, unknown>[]> {
  return db.rows<Record<string, unknown>>(appQueries.deploys(projectId, name, limit));
}
