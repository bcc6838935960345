import type { Executor } from '../../infra/db/db.js';
import { append, streamVersion } from '../../infra/event-store.js';
import { manifestQueries } from '../../sql/queries/manifest.js';

/**
 * The feature's records in the event log: one stream per project and kind
 * (`manifest-<project>`, `secrets-<project>`, `triggers-<project>`, `apps-<project>`).
 * Appends to one stream are serialised by a transaction-scoped advisory lock, so the
 * version read is the version appended at. Call inside a transaction.
 */
export type LogKind = 'manifest' | 'secrets' | 'triggers' | 'apps';

export const SYSTEM_ACTOR = 'system';

export async function appendLog(
  tx: Executor,
  kind: LogKind,
  projectId: string,
  events: Array<{ type: string; data: Record<string, unknown> }>,
  actor: string,
): Promise<void> {
  if (events.length === 0) return;
  const streamId = `${kind}-${projectId}`;
  await tx.run(manifestQueries.lockStream(streamId));
  const version = await streamVersion(tx, streamId);
  await append(tx, { streamId, streamType: kind, projectId, expectedVersion: version, events, metadata: { actor } });
}
