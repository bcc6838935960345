import type { Executor } from '../../infra/db/db.js';
import type { CheckSpec, Manifest, MergeQueueSpec, ReviewSpec } from '../../domain/manifest/schema.js';
import { manifestQueries } from '../../sql/queries/manifest.js';

export interface ChecksInForce {
  checks: CheckSpec[];
  review: ReviewSpec;
  merge_queue: MergeQueueSpec;
}

const NO_REVIEW: ReviewSpec = { required_statuses: [], send_failures_to_agent: false, max_agent_rounds: 3 };

/**
 * The checks in force: those of the manifest in force, i.e. the default branch's svc.toml
 * as last synced (a CR cannot change which checks judge it).
 */
export async function checksInForce(db: Pick<Executor, 'one'>, projectId: string): Promise<ChecksInForce> {
  const row = await db.one<{ manifest: Partial<Manifest> | null }>(manifestQueries.get(projectId));
  const m = row?.manifest;
  return {
    checks: (m?.checks ?? []).map((c) => ({ ...c, timeout_minutes: c.timeout_minutes ?? 15, secrets: c.secrets ?? [] })),
    review: { ...NO_REVIEW, ...(m?.review ?? {}) },
    merge_queue: { enabled: false, max_batch: 4, ...(m?.merge_queue ?? {}) },
  };
}

export const requiresSomething = (c: ChecksInForce): boolean => c.checks.length > 0 || c.review.required_statuses.length > 0;
