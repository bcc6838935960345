import type { Db } from '../../infra/db/db.js';
import { notFound } from '../../domain/errors.js';
import type { ProjectRecord } from '../../domain/project.js';
import { checkQueries } from '../../sql/queries/checks.js';
import { findCr } from '../change-requests/service.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** A run's stored log (already bounded and masked when it was written); 404 when absent or deleted. */
export async function readCheckLog(db: Db, project: ProjectRecord, crRef: string, runId: string): Promise<string> {
  const cr = await findCr(db, project.project_id, crRef);
  const id = runId.toLowerCase();
  if (!UUID.test(id)) throw notFound('Check log');
  const row = await db.one<{ body: string }>(checkQueries.getLog(project.project_id, cr.cr_id, id));
  if (!row) throw notFound('Check log');
  return row.body;
}

export async function deleteCheckLog(db: Db, project: ProjectRecord, crRef: string, runId: string): Promise<void> {
  const cr = await findCr(db, project.project_id, crRef);
  const id = runId.toLowerCase();
  if (!UUID.test(id) || (await db.run(checkQueries.deleteLog(project.project_id, cr.cr_id, id))) === 0) throw notFound('Check log');
}

/** The headers of a log response: text only, never sniffed into HTML, never cached. */
export const LOG_HEADERS = {
  'Content-Type': 'text/plain; charset=utf-8',
  'X-Content-Type-Options': 'nosniff',
  'Content-Security-Policy': "default-src 'none'; sandbox",
  'Cache-Control': 'no-store',
} as const;
