import type { Query } from '../query.js';

export const projectionQueries = {
  /**
   * Every committed event visible to this transaction, in global order. Unlike the
   * subscriber read this is not gated on running transactions: a rebuild must see exactly
   * what the live tables in the same snapshot reflect.
   */
  pageOfLog: (after: { txid: string; position: number }, limit: number): Query => ({
    text: `SELECT e.global_position, e.transaction_id::text AS txid, e.stream_id, e.stream_position,
        e.event_id, e.type, e.data, e.metadata, e.project_id, e.recorded_at
      FROM events e JOIN streams s USING (stream_id)
      WHERE (e.transaction_id, e.global_position) > ($1::xid8, $2::bigint) AND s.stream_type = ANY($3::text[])
      ORDER BY e.transaction_id, e.global_position
      LIMIT $4`,
    values: [after.txid, after.position, ['change_request', 'session', 'merge_queue'], limit],
  }),
};
