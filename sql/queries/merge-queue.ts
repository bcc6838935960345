import type { Query } from '../query.js';

/** A queue's row (projections/merge-queues.ts). */
export interface MergeQueueRow {
  project_id: string;
  base_ref: string;
  base_sha: string | null;
  built: unknown[];
  landing: unknown | null;
  held: unknown[];
  rebuilds: number;
  landed: number;
  updated_at: string | Date;
  stream_version: number | string;
}

/** A CR waiting in a queue, in the order it entered. */
export interface QueuedRow {
  cr_id: string;
  number: number;
  title: string;
  head_ref: string;
  /** The CR's base_ref now (another than the queue's: it was retargeted after it entered). */
  base_ref: string;
  status: string;
  origin_session_id: string | null;
  head_sha: string;
  base_sha: string;
  queued_by: string;
  queued_at: string;
}

const COLUMNS = ['project_id', 'base_ref', 'base_sha', 'built', 'landing', 'held', 'rebuilds', 'landed', 'updated_at', 'stream_version'] as const;

/** The entry of a CR ends with a later Queued (a new entry), Dequeued or Merged on its stream. */
const stillQueued = `NOT EXISTS (SELECT 1 FROM events l WHERE l.stream_id = q.stream_id AND l.stream_position > q.stream_position
    AND l.type IN ('ChangeRequestQueued', 'ChangeRequestDequeued', 'ChangeRequestMerged'))`;

export const mergeQueueQueries = {
  upsert: (r: Omit<MergeQueueRow, 'updated_at'> & { updated_at: string }, table: 'merge_queues' | 'merge_queues_rebuilt' = 'merge_queues'): Query => ({
    text: `INSERT INTO ${table} (${COLUMNS.join(', ')}) VALUES ($1, $2, $3, $4::jsonb, $5::jsonb, $6::jsonb, $7, $8, $9, $10)
      ON CONFLICT (project_id, base_ref) DO UPDATE SET ${COLUMNS.slice(2).map((c) => `${c} = EXCLUDED.${c}`).join(', ')}`,
    values: [r.project_id, r.base_ref, r.base_sha, JSON.stringify(r.built), JSON.stringify(r.landing), JSON.stringify(r.held), r.rebuilds, r.landed, r.updated_at, r.stream_version],
  }),
  get: (projectId: string, baseRef: string): Query => ({
    name: 'merge_queue_get',
    text: `SELECT ${COLUMNS.join(', ')} FROM merge_queues WHERE project_id = $1 AND base_ref = $2`,
    values: [projectId, baseRef],
  }),
  /** The CRs waiting in one queue, first in first. Closed ones included: the queue takes them out with their reason. */
  entries: (projectId: string, baseRef: string): Query => ({
    name: 'merge_queue_entries',
    text: `SELECT c.cr_id::text AS cr_id, c.number, c.title, c.head_ref, c.base_ref, c.status::text AS status, c.origin_session_id,
        q.data->>'head_sha' AS head_sha, q.data->>'base_sha' AS base_sha, q.data->>'queued_by' AS queued_by, q.data->>'queued_at' AS queued_at
      FROM events q JOIN change_requests c ON q.stream_id = 'cr-' || c.cr_id::text
      WHERE q.project_id = $1 AND q.type = 'ChangeRequestQueued' AND c.project_id = $1 AND COALESCE(q.data->>'base_ref', c.base_ref) = $2 AND ${stillQueued}
      ORDER BY q.global_position`,
    values: [projectId, baseRef],
  }),
  /** The latest CRs to leave one queue (merged by it, or dequeued), newest first. */
  recent: (projectId: string, baseRef: string, limit: number): Query => ({
    name: 'merge_queue_recent',
    text: `SELECT c.cr_id::text AS cr_id, c.number, c.title, e.type, e.data, e.recorded_at
      FROM events e JOIN change_requests c ON e.stream_id = 'cr-' || c.cr_id::text
      WHERE e.project_id = $1 AND c.project_id = $1 AND c.base_ref = $2
        AND (e.type = 'ChangeRequestDequeued' OR (e.type = 'ChangeRequestMerged' AND e.data->>'via' = 'queue'))
      ORDER BY e.global_position DESC LIMIT $3`,
    values: [projectId, baseRef, limit],
  }),
  /** Every queue with something to do: CRs waiting, or results built, a landing or conflicts held. */
  active: (): Query => ({
    name: 'merge_queue_active',
    text: `SELECT DISTINCT c.project_id::text AS project_id, COALESCE(q.data->>'base_ref', c.base_ref) AS base_ref FROM events q JOIN change_requests c ON q.stream_id = 'cr-' || c.cr_id::text
        WHERE q.type = 'ChangeRequestQueued' AND ${stillQueued}
      UNION SELECT project_id::text, base_ref FROM merge_queues WHERE built <> '[]'::jsonb OR landing IS NOT NULL OR held <> '[]'::jsonb`,
    values: [],
  }),
  createScratch: (): Query => ({ text: 'CREATE TEMP TABLE merge_queues_rebuilt (LIKE merge_queues INCLUDING ALL) ON COMMIT DROP', values: [] }),
  /** Rows that differ between the live table and the replay. */
  diffScratch: (limit: number): Query => ({
    text: `(SELECT 'live_only' AS side, project_id::text AS id FROM (SELECT * FROM merge_queues EXCEPT SELECT * FROM merge_queues_rebuilt) a)
      UNION ALL (SELECT 'rebuilt_only', project_id::text FROM (SELECT * FROM merge_queues_rebuilt EXCEPT SELECT * FROM merge_queues) b) LIMIT ${Number(limit)}`,
    values: [],
  }),
  replaceLive: (): Query => ({ text: 'DELETE FROM merge_queues; INSERT INTO merge_queues SELECT * FROM merge_queues_rebuilt', values: [] }),
};
