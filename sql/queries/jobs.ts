import type { Query } from '../../infra/db/db.js';

/**
 * Leases on pg-boss jobs (pg-boss 10 has no heartbeat). A worker renews the jobs it runs
 * by moving their `started_on` forward (pg-boss's own expiry, started_on + expire_in, then
 * never fires for a live job); a job still `active` whose lease lapsed belongs to a dead
 * worker and goes back to `retry` at once (or `failed` once its retries are spent), for any
 * live worker to take.
 */
const FAILED_OUTPUT = JSON.stringify({
  ok: false,
  error: { code: 'unavailable', reason: 'Job failed', message: 'The workers running this job died too many times.', details: {} },
});

export const jobQueries = {
  renew: (queue: string, ids: string[]): Query => ({
    name: 'job_lease_renew',
    text: `UPDATE pgboss.job SET started_on = now()
      WHERE name = $1 AND id = ANY($2::uuid[]) AND state = 'active'`,
    values: [queue, ids],
  }),
  reclaim: (queue: string, leaseMs: number): Query => ({
    name: 'job_lease_reclaim',
    text: `UPDATE pgboss.job SET
        state = CASE WHEN retry_count < retry_limit THEN 'retry'::pgboss.job_state ELSE 'failed'::pgboss.job_state END,
        start_after = now(),
        completed_on = CASE WHEN retry_count < retry_limit THEN NULL ELSE now() END,
        output = CASE WHEN retry_count < retry_limit THEN output ELSE $3::jsonb END
      WHERE name = $1 AND state = 'active' AND started_on < now() - make_interval(secs => $2::double precision / 1000)
      RETURNING id, state::text AS state`,
    values: [queue, leaseMs, FAILED_OUTPUT],
  }),
};
