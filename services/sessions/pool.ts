import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { sandboxFetch } from '../../lib/sandbox-dial.js';
import type { Executor } from '../../infra/db/db.js';
import type { Manifest } from '../../domain/manifest/schema.js';
import type { ProjectRecord } from '../../domain/project.js';
import type { SandboxHandle, SandboxProviderName } from '../../infra/sandbox/port.js';
import { defaultProviderName } from '../../infra/sandbox/registry.js';
import { manifestQueries } from '../../sql/queries/manifest.js';
import { poolQueries, type PoolRow } from '../../sql/queries/pool.js';
import { projectQueries } from '../../sql/queries/projects.js';
import { pause, type SessionDeps } from './deps.js';
import { chooseModel, gatewayConfigured, gatewayModels } from './model-choice.js';
import { repoUrlOf } from './sandbox-env.js';
import { sandboxSettings } from './sandbox-settings.js';
import { INSTALL_LABEL, installIdOf } from './orphans.js';

/**
 * The pool of prepared sandboxes (docs/sessions.md "Pool"). A worker keeps
 * each project's `[sandbox] pool = N` sandboxes booted (all projects together at most
 * SVC_SANDBOX_POOL_MAX): daemon and runtime running, no session, no credential but the
 * sandbox's own control key (`svc_pool_…`, sealed in `pool_sandboxes`). A create claims
 * one in the transaction that admits the session (`claimPoolSandbox`); the provisioning
 * hands it over (pool-handover.ts; the daemon's side of the claim is agentd/pool-claim.ts).
 * Pool sandboxes are not sessions: no cap counts them.
 */
export const POOL_KEY_PREFIX = 'svc_pool_';
const POOL_LABEL = 'svc.pool';

const providerOf = (deps: Pick<SessionDeps, 'config' | 'provider'>): SandboxProviderName =>
  deps.provider?.name ?? deps.config.SVC_SANDBOX_PROVIDER ?? defaultProviderName();

/**
 * What a pool sandbox was booted with, as far as a session would see it: provider, image,
 * runtime, the manifest's sandbox settings, the agent's config dir and the models the
 * runtime declares. A session is handed only a sandbox with its own fingerprint.
 */
export function poolFingerprint(deps: Pick<SessionDeps, 'config' | 'provider'>, manifest: Manifest | null): string {
  const c = deps.config;
  const sb = manifest?.sandbox ?? {};
  const parts = {
    provider: providerOf(deps),
    image: c.SVC_SANDBOX_IMAGE ?? null,
    runtime: c.SVC_AGENT_RUNTIME ?? null,
    sandbox: { image: sb.image ?? null, dockerfile: sb.dockerfile ?? null, cpus: sb.cpus ?? null, memory_mb: sb.memory_mb ?? null, egress: sb.egress ?? null },
    config_dir: manifest?.agent?.config_dir ?? null,
    models: gatewayConfigured(c) ? gatewayModels(c) : [],
  };
  return createHash('sha256').update(JSON.stringify(parts)).digest('hex').slice(0, 32);
}

const manifestOf = async (db: Executor, projectId: string): Promise<Manifest | null> =>
  (await db.one<{ manifest: Manifest | null }>(manifestQueries.get(projectId)))?.manifest ?? null;

/**
 * In the create's transaction: claims a ready pool sandbox for the session when one of the
 * project matches (same fingerprint, a model the runtime declared); else nothing (cold).
 */
export async function claimPoolSandbox(tx: Executor, deps: Pick<SessionDeps, 'config' | 'provider'>, i: { project: ProjectRecord; sessionId: string; model: string | null }): Promise<string | null> {
  if (deps.config.SVC_SANDBOX_POOL_MAX === 0) return null;
  const manifest = await manifestOf(tx, i.project.project_id);
  if (!((manifest?.sandbox?.pool ?? 0) > 0)) return null;
  const choice = chooseModel(deps.config as never, i.model, manifest?.agent?.model);
  // A model the pool's runtime was not told of (a runtime provider's) needs a sandbox booted for it.
  if (choice.via === 'provider') return null;
  const row = await tx.one<{ sandbox_id: string }>(poolQueries.take(i.project.project_id, providerOf(deps), poolFingerprint(deps, manifest), i.sessionId));
  return row?.sandbox_id ?? null;
}

export const handleOfPool = (r: PoolRow): SandboxHandle => ({ sandboxId: r.sandbox_id, provider: r.provider as SandboxProviderName, url: r.url ?? '', ref: r.ref ?? '' });

/** The environment of a pool sandbox: where things are, never who it works for. */
export function poolEnv(deps: SessionDeps, project: ProjectRecord, key: string): Record<string, string> {
  const api = deps.apiUrl();
  const env: Record<string, string> = {
    SVC_POOL: '1',
    SVC_TOKEN: key,
    SVC_PROJECT_ID: project.project_id,
    SVC_REPO_URL: repoUrlOf(deps, project),
    SVC_DEFAULT_BRANCH: project.default_branch,
    SVC_BASE_REF: project.default_branch,
    SVC_SERVICE_PORT: '8000',
    SVC_API_URL: api,
  };
  if (gatewayConfigured(deps.config)) {
    const base = `${api.replace(/\/+$/, '')}/llm`;
    Object.assign(env, { SVC_LLM_BASE_URL: base, SVC_YOLO_URL: base, SVC_LLM_MODELS: gatewayModels(deps.config).join(',') });
  }
  return env;
}

export interface PoolKeeper {
  /** One pass (workers/sandbox-pool-keeper.ts runs it, one worker at a time). */
  pass(): Promise<void>;
  /** Boots in flight stop waiting for their sandbox (the next start's pass decides). */
  stop(): void;
}

/**
 * The pool keeper's pass: pool sandboxes that died or fail their health check three times
 * in a row are destroyed (and so replaced), claims nobody picked up are destroyed,
 * sandboxes of a stale fingerprint or beyond a project's N go, and missing ones boot.
 * What boots and what failed its checks is the keeper's state across passes.
 */
export function createPoolKeeper(deps: SessionDeps): PoolKeeper {
  const booting = new Set<string>();
  const failures = new Map<string, number>();
  const log = deps.logger.child({ component: 'sandbox-pool' });
  let stopped = false;

  const drop = async (r: PoolRow, why: string) => {
    await deps.db.run(poolQueries.remove(r.sandbox_id));
    failures.delete(r.sandbox_id);
    await deps.provider!.destroy(handleOfPool(r)).catch((err: Error) => log.warn({ sandbox_id: r.sandbox_id, err: err.message }, 'pool sandbox not destroyed'));
    log.info({ sandbox_id: r.sandbox_id, project_id: r.project_id, why }, 'pool sandbox dropped');
  };

  const healthy = async (r: PoolRow): Promise<boolean> => {
    if ((await deps.provider!.inspect(handleOfPool(r))) !== 'running') return false;
    const body = await sandboxFetch(r.url ?? '', '/svc/health', { signal: AbortSignal.timeout(2000) })
      .then((res) => (res.ok ? (res.json() as Promise<{ agent?: string }>) : null))
      .catch(() => null);
    return body?.agent === 'running';
  };

  const boot = async (project: ProjectRecord, fingerprint: string) => {
    const provider = deps.provider!;
    const sandboxId = randomUUID();
    const key = POOL_KEY_PREFIX + randomBytes(32).toString('base64url');
    // The install's id too: a pool sandbox left behind (a crash, a server stopped for good) is the orphan sweep's.
    const labels = { [POOL_LABEL]: 'true', 'svc.project': project.project_id, 'svc.sandbox': sandboxId, [INSTALL_LABEL]: await installIdOf(deps.db) };
    booting.add(sandboxId);
    const row = { sandbox_id: sandboxId, project_id: project.project_id, provider: provider.name, url: null, ref: null } as PoolRow;
    try {
      await deps.db.run(poolQueries.insert({ sandboxId, projectId: project.project_id, provider: provider.name, fingerprint, keySealed: deps.secrets.seal(key, `pool:${sandboxId}`), labels }));
      const tip = (await deps.repos.for(project).readTips([project.default_branch]))[project.default_branch];
      const settings = await sandboxSettings(deps, provider.name, project, tip ?? '');
      if (settings.dockerfile) {
        // A Dockerfile is built per session's base commit: nothing to prepare ahead.
        await deps.db.run(poolQueries.remove(sandboxId));
        return;
      }
      const h = await provider.create({ sandboxId, sessionId: '', projectId: project.project_id, accountId: project.account_id, env: poolEnv(deps, project, key), ...settings, labels });
      row.url = h.url;
      row.ref = h.ref;
      await deps.db.run(poolQueries.started(sandboxId, h.url, h.ref));
      const deadline = performance.now() + deps.config.SVC_SESSION_PROVISION_TIMEOUT_SECONDS * 1000;
      while (!(await healthy(row))) {
        if (stopped || deps.stopping?.aborted) return; // left booting: the next start's pass decides
        if (performance.now() > deadline || (await provider.inspect(h)) === 'exited') throw new Error('the pool sandbox did not become ready');
        await pause(50, deps.stopping);
      }
      await deps.db.run(poolQueries.ready(sandboxId));
      log.info({ sandbox_id: sandboxId, project_id: project.project_id }, 'pool sandbox ready');
    } catch (err) {
      log.warn({ sandbox_id: sandboxId, err: (err as Error).message }, 'pool sandbox failed to boot');
      await drop(row, 'boot failed').catch(() => undefined);
    } finally {
      booting.delete(sandboxId);
    }
  };

  const passLocked = async (providerName: string) => {
    if (providerName === 'kubernetes') return; // not pooled: untested there (docs/manifest.md)
    const timeout = deps.config.SVC_SESSION_PROVISION_TIMEOUT_SECONDS;
    for (const r of await deps.db.rows<PoolRow>(poolQueries.staleClaims(timeout))) await drop(r, 'claim not picked up');
    let rows = await deps.db.rows<PoolRow>(poolQueries.ofProvider(providerName));
    for (const r of rows) {
      if (r.state === 'booting' && !booting.has(r.sandbox_id)) await drop(r, 'boot interrupted'); // an earlier process's
      if (r.state !== 'ready') continue;
      if (await healthy(r)) failures.delete(r.sandbox_id);
      else {
        const n = (failures.get(r.sandbox_id) ?? 0) + 1;
        failures.set(r.sandbox_id, n);
        if (n >= 3 || (await deps.provider!.inspect(handleOfPool(r))) === 'exited') await drop(r, 'failed its health check');
      }
    }
    rows = await deps.db.rows<PoolRow>(poolQueries.ofProvider(providerName));
    const max = deps.config.SVC_SANDBOX_POOL_MAX;
    const wanted = max > 0 ? await deps.db.rows<{ project_id: string; pool: number }>(poolQueries.wanted()) : [];
    const want = new Map(wanted.map((w) => [w.project_id, w.pool]));
    let total = rows.filter((r) => r.state !== 'claimed').length;
    for (const w of wanted) {
      const project = await deps.db.one<ProjectRecord>(projectQueries.byId(w.project_id));
      if (!project) continue;
      const fp = poolFingerprint(deps, await manifestOf(deps.db, w.project_id));
      const mine = rows.filter((r) => r.project_id === w.project_id && r.state !== 'claimed');
      for (const r of mine.filter((x) => x.fingerprint !== fp && x.state === 'ready')) {
        await drop(r, 'booted with other settings');
        total--;
      }
      const current = mine.filter((x) => x.fingerprint === fp);
      const excess = current.length - w.pool;
      for (const r of current.filter((x) => x.state === 'ready').slice(0, Math.max(0, excess))) {
        await drop(r, 'more than the project asks for');
        total--;
      }
      for (let n = current.length; n < w.pool && total < max; n++, total++) void boot(project, fp);
    }
    for (const r of rows.filter((x) => x.state === 'ready' && !want.has(x.project_id))) await drop(r, 'the project no longer asks for a pool');
  };

  return {
    async pass() {
      if (deps.provider) await passLocked(deps.provider.name);
    },
    stop() {
      stopped = true;
    },
  };
}
