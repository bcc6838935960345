import type { Query } from '../query.js';

/**
 * The advisory lock (sql/queries/advisory-locks.ts) a worker process holds for its whole
 * life (see sql/021_job_claims.sql): free means the worker is gone.
 */
export const workerLockKey = (workerId: string): string => `svc-worker:${workerId}`;

export const jobClaimQueries = {
  /** Claims of jobs just fetched, in the fetch's transaction (a worker that dies before its commit fetched nothing). */
  claimMany: (jobIds: string[], queue: string, workerId: string): Query => ({
    text: `INSERT INTO job_claims (job_id, queue, worker_id) SELECT unnest($1::uuid[]), $2, $3
      ON CONFLICT (job_id) DO UPDATE SET worker_id = EXCLUDED.worker_id, claimed_at = now()`,
    values: [jobIds, queue, workerId],
  }),
  /**
   * Claims one queued job by id for this worker (the fetch pg-boss would do, for that one
   * job: state active, started now, a retry counted) together with its `job_claims` row, in
   * one statement. No row: the job was not waiting (another worker took it first).
   */
  claimById: (schema: string, queue: string, jobId: string, workerId: string): Query => ({
    name: `job_claim_by_id_${schema}`,
    text: `WITH job AS (
        UPDATE ${schema}.job SET state = 'active', started_on = now(),
          retry_count = CASE WHEN started_on IS NOT NULL THEN retry_count + 1 ELSE retry_count END
        WHERE name = $1 AND id = $2 AND state < 'active'
        RETURNING id, retry_count
      ), claim AS (
        INSERT INTO job_claims (job_id, queue, worker_id) SELECT id, $1, $3 FROM job
        ON CONFLICT (job_id) DO UPDATE SET worker_id = EXCLUDED.worker_id, claimed_at = now()
        RETURNING job_id
      )
      SELECT job.id, job.retry_count FROM job JOIN claim ON claim.job_id = job.id`,
    values: [queue, jobId, workerId],
  }),
  /**
   * In a transaction: its commit does not wait for the WAL flush. For a job and claim this
   * process runs at once: a merge flushes its attempt record before it publishes anything,
   * which flushes this commit too; if only this process dies, the commit stands anyway.
   */
  noFlushWait: (): Query => ({ text: 'SET LOCAL synchronous_commit TO OFF', values: [] }),
  release: (jobId: string, workerId: string): Query => ({
    text: 'DELETE FROM job_claims WHERE job_id = $1 AND worker_id = $2',
    values: [jobId, workerId],
  }),
  otherWorkers: (workerId: string): Query => ({
    text: 'SELECT DISTINCT worker_id FROM job_claims WHERE worker_id <> $1',
    values: [workerId],
  }),
  /** Takes over a dead worker's claims: only the caller that deletes a row re-queues its job. */
  takeOver: (deadWorkerId: string): Query => ({
    text: 'DELETE FROM job_claims WHERE worker_id = $1 RETURNING job_id, queue, worker_id',
    values: [deadWorkerId],
  }),
};
