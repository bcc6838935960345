-- Which worker process is running which job. Each worker holds a session advisory lock
-- named after its id for as long as it lives; a claim whose worker's lock is free belongs
-- to a dead process (SIGKILL, lost node), and any other worker hands the job back to the
-- queue at once instead of leaving it active until it expires.
CREATE TABLE job_claims (
  job_id     uuid PRIMARY KEY,
  queue      text NOT NULL,
  worker_id  uuid NOT NULL,
  claimed_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX job_claims_worker ON job_claims (worker_id);
