import { sandboxFetch } from '../../lib/sandbox-dial.js';
import { SandboxError, type SandboxHandle } from '../../infra/sandbox/port.js';
import { poolQueries, type PoolRow } from '../../sql/queries/pool.js';
import type { Session } from '../../domain/session/index.js';
import type { SessionDeps } from './deps.js';
import { handleOfPool } from './pool.js';

/**
 * The provisioning side of a pool claim (docs/sessions.md "Pool"): the session's claimed
 * sandbox, taken out of `pool_sandboxes` at once (a retried provisioning never hands one
 * over twice: it finds nothing and starts cold), then `POST /svc/claim` on its daemon with
 * the pool key: the daemon rotates its key to the session's SVC_TOKEN, puts the session's
 * variables where the agent's shells read them, gives the runtime the model key and checks
 * out the session branch. The runtime is not restarted.
 */
export async function takeClaimed(deps: Pick<SessionDeps, 'db'>, sessionId: string): Promise<PoolRow | null> {
  return (await deps.db.one<PoolRow>(poolQueries.handOut(sessionId))) ?? null;
}

/**
 * Variables that say where things are as the sandbox reaches them (its gateway's port,
 * not the server's address): the daemon keeps the values it booted with.
 */
export const PLACE_VARS = ['SVC_API_URL', 'SVC_REPO_URL', 'SVC_LLM_BASE_URL', 'SVC_YOLO_URL', 'SVC_SERVICE_PORT'] as const;

export async function handOver(
  deps: Pick<SessionDeps, 'secrets' | 'provider'>,
  pooled: PoolRow,
  i: { session: Session; env: Record<string, string>; serviceKey: string; llmKey: string },
): Promise<SandboxHandle> {
  const handle = handleOfPool(pooled);
  try {
    return await claimCall(deps, pooled, handle, i);
  } catch (err) {
    // Half-handed-over: it serves nobody, now or later.
    await deps.provider?.destroy(handle).catch(() => undefined);
    throw err;
  }
}

async function claimCall(
  deps: Pick<SessionDeps, 'secrets'>,
  pooled: PoolRow,
  handle: SandboxHandle,
  i: { session: Session; env: Record<string, string>; serviceKey: string; llmKey: string },
): Promise<SandboxHandle> {
  const poolKey = deps.secrets.open(pooled.key_sealed, `pool:${pooled.sandbox_id}`);
  const env = { ...i.env };
  for (const k of PLACE_VARS) delete env[k];
  delete env.SVC_PROJECT_AUTO_CLONE;
  const body = {
    token: i.serviceKey,
    session_id: i.session.session_id,
    branch: i.session.branch,
    base_ref: i.session.base_ref,
    env,
    ...(env.SVC_LLM_API_KEY ? { llm_key: i.llmKey } : {}),
    ...(env.SVC_AGENT_NAME ? { agent_name: env.SVC_AGENT_NAME } : {}),
    ...(env.SVC_AGENT_MODEL ? { agent_model: env.SVC_AGENT_MODEL } : {}),
  };
  let res: Response;
  try {
    res = await sandboxFetch(handle.url, '/svc/claim', {
      method: 'POST',
      headers: { authorization: `Bearer ${poolKey}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(60_000),
    });
  } catch (err) {
    throw new SandboxError('unavailable', `the pool sandbox did not answer its claim: ${(err as Error).message}`);
  }
  const text = await res.text();
  if (!res.ok) throw new SandboxError('create_failed', `the pool sandbox refused its claim (${res.status}): ${text.slice(0, 300)}`);
  return handle;
}
