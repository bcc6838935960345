import type { Query } from '../query.js';

/**
 * What sessions and change requests cost (docs/models.md "Cost"), read from the usage rows
 * and the event log as they are: nothing here writes, so a price change or a CR closed
 * later rewrites nothing that was recorded.
 *
 * Attribution is over one branch (a session's branch is its id): the timeline is cut at
 * every time a CR from that branch opened, reopened, closed or merged, and each piece
 * belongs to the CR open at its start (the latest opened when several are), else to the
 * next CR opened (or reopened) from the branch, else to none (unattributed): work done
 * while a CR was closed went into it once it is reopened. A model call belongs to the
 * piece its usage row's `created_at` falls in; a sandbox's running time is split across
 * the pieces it overlaps.
 */

/** `$1` project, `$2` branch: the pieces of the branch's timeline and the CR each belongs to (`owner`, null: unattributed). */
const pieces = `
  branch_crs AS (
    SELECT cr_id, number FROM change_requests WHERE project_id = $1 AND head_ref = $2
  ),
  marks AS (
    SELECT c.cr_id, e.stream_position, e.type,
      (CASE e.type
        WHEN 'ChangeRequestOpened' THEN e.data->>'created_at'
        WHEN 'ChangeRequestReopened' THEN e.data->>'reopened_at'
        WHEN 'ChangeRequestClosed' THEN e.data->>'closed_at'
        ELSE e.data->>'merged_at' END)::timestamptz AS at
    FROM branch_crs c JOIN events e ON e.stream_id = 'cr-' || c.cr_id::text
    WHERE e.type IN ('ChangeRequestOpened', 'ChangeRequestReopened', 'ChangeRequestClosed', 'ChangeRequestMerged')
  ),
  spans AS (
    SELECT cr_id, type, at AS from_at, coalesce(lead(at) OVER (PARTITION BY cr_id ORDER BY stream_position), 'infinity') AS to_at FROM marks
  ),
  open_spans AS (SELECT cr_id, from_at, to_at FROM spans WHERE type IN ('ChangeRequestOpened', 'ChangeRequestReopened')),
  opened AS (SELECT cr_id, at FROM marks WHERE type IN ('ChangeRequestOpened', 'ChangeRequestReopened')),
  bounds AS (SELECT at FROM marks UNION SELECT '-infinity'::timestamptz),
  cuts AS (SELECT at AS from_at, coalesce(lead(at) OVER (ORDER BY at), 'infinity') AS to_at FROM bounds),
  pieces AS (
    SELECT p.from_at, p.to_at, coalesce(
      (SELECT s.cr_id FROM open_spans s WHERE s.from_at <= p.from_at AND p.from_at < s.to_at ORDER BY s.from_at DESC LIMIT 1),
      (SELECT o.cr_id FROM opened o WHERE o.at > p.from_at ORDER BY o.at LIMIT 1)
    ) AS owner
    FROM cuts p
  )`;

/**
 * `$4` the session's stream, `$3` now: each sandbox's running time, from SandboxActive to the
 * first of its own end (stopped, errored, archived) or the session's (stopped, failed,
 * removed, restarted), or now while it runs.
 */
const running = `
  sev AS (SELECT type, data, stream_position, (data->>'at')::timestamptz AS at FROM events WHERE stream_id = $4),
  started AS (
    SELECT data->>'sandbox_id' AS sandbox_id, min(at) AS at, min(stream_position) AS pos FROM sev WHERE type = 'SandboxActive' GROUP BY 1
  ),
  runs AS (
    SELECT s.sandbox_id, s.at AS from_at, (
      SELECT min(e.at) FROM sev e WHERE e.stream_position > s.pos AND (
        (e.type IN ('SandboxStopped', 'SandboxErrored', 'SandboxArchived') AND e.data->>'sandbox_id' = s.sandbox_id)
        OR e.type IN ('SessionStopped', 'SessionFailed', 'SessionRemoved', 'SessionRestarted'))
    ) AS ended_at
    FROM started s
  ),
  run_spans AS (SELECT sandbox_id, from_at, greatest(from_at, coalesce(ended_at, $3::timestamptz)) AS to_at, ended_at IS NULL AS live FROM runs)`;

export interface OwnedUsage {
  /** The CR the calls belong to; null: unattributed. */
  cr_id: string | null;
  number: number | null;
  model: string;
  /** Null: calls of a model without a price (counted in tokens only). */
  currency: string | null;
  input_tokens: number;
  output_tokens: number;
  requests: number;
  cost: number | null;
}

export interface OwnedSandboxTime {
  cr_id: string | null;
  number: number | null;
  seconds: number;
  /** A sandbox still runs (its time counted until now). */
  live: boolean;
}

export interface BranchCostRow {
  usage: OwnedUsage[] | null;
  sandbox: OwnedSandboxTime[] | null;
  /** The session whose branch this is: whether it exists, its own model, the manifest's. */
  session: boolean;
  session_model: string | null;
  manifest_model: string | null;
  /** CPU time its sandboxes' providers reported at their stops; null: none reported. */
  cpu_seconds: number | null;
}

export const costQueries = {
  /** What a sandbox's provider reported of its CPU time, at its stop (the largest reading wins). */
  recordCpu: (sandboxId: string, sessionId: string, cpuSeconds: number): Query => ({
    text: `INSERT INTO sandbox_cpu (sandbox_id, session_id, cpu_seconds) VALUES ($1, $2, $3)
      ON CONFLICT (sandbox_id) DO UPDATE SET cpu_seconds = greatest(sandbox_cpu.cpu_seconds, EXCLUDED.cpu_seconds), recorded_at = now()`,
    values: [sandboxId, sessionId, cpuSeconds],
  }),
  /**
   * Everything a branch cost, in one statement: the model calls of the session whose branch
   * it is (a session's branch is its id) per CR they belong to, model and currency
   * (unpriced calls are their own group, currency null), its sandboxes' running time per CR,
   * and the models that say whether its agent went through the gateway at all. `now` ends
   * the time of a sandbox still running.
   */
  branch: (projectId: string, branch: string, now: Date): Query => ({
    name: 'cost_of_branch',
    text: `WITH ${pieces}, ${running},
      calls AS (
        SELECT u.model, u.currency, u.input_tokens, u.output_tokens, u.cost,
          (SELECT p.owner FROM pieces p WHERE p.from_at <= u.created_at AND u.created_at < p.to_at ORDER BY p.from_at DESC LIMIT 1) AS owner
        FROM llm_usage u WHERE u.project_id = $1 AND u.session_id = $2
      ),
      usage AS (
        SELECT c.owner AS cr_id, b.number, c.model, c.currency,
          sum(c.input_tokens)::float8 AS input_tokens, sum(c.output_tokens)::float8 AS output_tokens,
          count(*)::int AS requests, sum(c.cost)::float8 AS cost
        FROM calls c LEFT JOIN branch_crs b ON b.cr_id = c.owner
        GROUP BY c.owner, b.number, c.model, c.currency
      ),
      shares AS (
        SELECT p.owner, r.live, extract(epoch FROM least(r.to_at, p.to_at) - greatest(r.from_at, p.from_at)) AS seconds
        FROM run_spans r JOIN pieces p ON p.from_at < r.to_at AND r.from_at < p.to_at
      ),
      sandbox AS (
        SELECT s.owner AS cr_id, b.number, sum(s.seconds)::float8 AS seconds, bool_or(s.live) AS live
        FROM shares s LEFT JOIN branch_crs b ON b.cr_id = s.owner
        GROUP BY s.owner, b.number
      ),
      sess AS (SELECT agent_model AS model FROM project_sessions WHERE project_id = $1 AND session_id = $2)
      SELECT
        (SELECT json_agg(u ORDER BY u.number NULLS LAST, u.model, u.currency NULLS LAST) FROM usage u) AS usage,
        (SELECT json_agg(s ORDER BY s.number NULLS LAST) FROM sandbox s) AS sandbox,
        EXISTS (SELECT 1 FROM sess) AS session,
        (SELECT model FROM sess) AS session_model,
        (SELECT manifest->'agent'->>'model' FROM project_manifests WHERE project_id = $1) AS manifest_model,
        (SELECT sum(cpu_seconds)::float8 FROM sandbox_cpu WHERE session_id = $2) AS cpu_seconds`,
    values: [projectId, branch, now, `session-${branch}`],
  }),
};
