import type { Executor } from '../../infra/db/db.js';
import { appendOnly } from '../../infra/event-sourcing/handler.js';

/**
 * The feature's records in the event log: one stream per project and kind
 * (`manifest-<project>`, `secrets-<project>`, `triggers-<project>`, `apps-<project>`,
 * `budgets-<project>`).
 * Audit logs beside tables written directly: they append through the one write path's
 * append-only mode (no decider, no projection: a rebuild never touches them). Call
 * inside a transaction.
 */
export type LogKind = 'manifest' | 'secrets' | 'triggers' | 'apps' | 'budgets';

export const SYSTEM_ACTOR = 'system';

export async function appendLog(
  tx: Executor,
  kind: LogKind,
  projectId: string,
  events: Array<{ type: string; data: Record<string, unknown> }>,
  actor: string,
): Promise<void> {
  await appendOnly(tx, { id: `${kind}-${projectId}`, type: kind, projectId }, events, actor);
}
