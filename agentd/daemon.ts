import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import type http from 'node:http';
import type { Logger } from '../lib/logger.js';
import { DEFAULT_AGENT_CONFIG_DIR, loadAgentConfigDir } from './agent-config-dir.js';
import { displayRepoUrl, wipOf, type AgentdConfig } from './config.js';
import type { ControlDeps } from './control-routes.js';
import { helperCommand } from './git-credential-helper.js';
import { Health } from './health.js';
import { cloneRepo, pullSessionBranch, RepoError, type RepoSettings } from './repo.js';
import { git } from './git.js';
import { startModelRelay } from './model-relay.js';
import { prepareShellProfile, writeSessionEnv, type ClaimBody } from './pool-claim.js';
import { GATEWAY_PROVIDER } from './runtime-config.js';
import { RuntimeClient } from './runtime-client.js';
import { RuntimeEnv } from './runtime-env.js';
import { runtimeConfigContent } from './runtime-config.js';
import { isOpencode, markRuntimeDepsInstalled, unmarkRuntimeDeps } from './runtime-deps.js';
import { tracksRuntimeConfig, warmRuntime, warmupNonce } from './runtime-warmup.js';
import { DaemonListener } from './raw-proxy/listener.js';
import { UpstreamPool } from './raw-proxy/upstream-pool.js';
import { createDaemonServer, isControlPath } from './server.js';
import { RuntimeSupervisor } from './supervisor.js';
import { Checkpointer } from './checkpointer.js';

/**
 * The daemon, assembled: listener first (health answers while the repo clones), then
 * clone, config dir, runtime, and the bootstrap prompt. `stop()` undoes all of it.
 */
export interface Daemon {
  port: number;
  booted: Promise<void>;
  stop(): Promise<void>;
  /** Synchronous last resort on process exit: kill the runtime's process group. */
  killNow(): void;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export async function startDaemon(config: AgentdConfig, env: NodeJS.ProcessEnv, logger: Logger): Promise<Daemon> {
  let configDir = path.join(config.workspace, DEFAULT_AGENT_CONFIG_DIR);
  let booted = false;
  let repoReady = !config.autoClone;
  let stopping = false;
  let booted$: Promise<void> = Promise.resolve();
  // The control key: a pool sandbox's rotates to the session's at its claim (pool-claim.ts).
  const key = { value: config.token };
  // The session's model key: the relay adds it to the runtime's model calls; a pool sandbox gets it at its claim.
  const llmKey = { value: config.llm.apiKey };
  const nonce = warmupNonce();
  const opencode = isOpencode(config.runtime.command);
  const relay =
    config.llm.baseUrl && (config.llm.apiKey || config.pool)
      ? await startModelRelay({ upstream: config.llm.baseUrl, key: () => llmKey.value, warmupNonce: nonce, logger: logger.child({ component: 'model-relay' }) })
      : undefined;
  const configContent = runtimeConfigContent({ baseUrl: relay?.url, apiKey: relay?.token, models: config.llm.models, agentModel: config.agentModel });
  // The warm-up turn's model: one behind the relay (a runtime provider's model would be a real call).
  const warmModel = !relay ? undefined : config.agentModel?.startsWith(`${GATEWAY_PROVIDER}/`) ? config.agentModel : config.llm.models[0] ? `${GATEWAY_PROVIDER}/${config.llm.models[0]}` : undefined;
  // While the runtime warms up nothing reaches it from outside (agentState): a client
  // listing its sessions must never see, or join, the throwaway one.
  let warming = false;
  const warm = async () => {
    if (!opencode || stopping) return;
    warming = true;
    try {
      if (await supervisor.waitUntilRunning(120_000)) await warmRuntime({ client, nonce, model: warmModel, logger: logger.child({ component: 'warm-up' }) });
    } finally {
      warming = false;
      health.invalidate();
    }
  };
  const runtimeEnv = new RuntimeEnv(env, () => ({ HOME: config.runtime.home, OPENCODE_CONFIG_DIR: configDir, ...(configContent ? { OPENCODE_CONFIG_CONTENT: configContent } : {}) }));
  const supervisor = new RuntimeSupervisor({
    spec: {
      command: config.runtime.command,
      args: ['serve', '--port', String(config.runtime.port), '--hostname', '127.0.0.1'],
      port: config.runtime.port,
      cwd: config.workspace,
      env: () => runtimeEnv.snapshot(),
    },
    logger: logger.child({ component: 'supervisor' }),
    backoffMs: config.restartBackoffMs,
    backoffMaxMs: config.restartBackoffMaxMs,
    stopGraceMs: config.stopGraceMs,
  });
  // The runtime may boot while the repo clones (below) and warms up after: nothing reaches it
  // before the repo is ready and the warm-up is over (a pool sandbox counts as ready only then).
  const agentState = () => (supervisor.state === 'running' && (warming || (!repoReady && !config.pool)) ? 'starting' : supervisor.state);
  let repo: RepoSettings | undefined = config.repoUrl
    ? {
        workspace: config.workspace,
        repoUrl: config.repoUrl,
        branch: config.branch,
        baseRef: config.baseRef,
        apiUrl: config.apiUrl,
        projectId: config.projectId,
        token: config.token,
        agentCredentialHelper: process.argv[1] ? helperCommand(process.execPath, process.argv[1]) : undefined,
      }
    : undefined;
  const health = new Health({
    workspace: config.workspace,
    repo: displayRepoUrl(config.repoUrl),
    branchHint: config.branch,
    agentState,
    repoReady: () => repoReady,
  });
  const client = new RuntimeClient(config.runtime.port);
  // Pause and resume: only a session's sandbox (it has a session, a project and the server to
  // save to). A pool sandbox gets its checkpointer at its claim, with the session's key.
  const checkpointerOf = (sessionId: string, token: string, wip: AgentdConfig['wip']) =>
    new Checkpointer({
      settings: { workspace: config.workspace, home: config.runtime.home, xdgDataHome: env.XDG_DATA_HOME || undefined, maxBytes: wip.maxBytes },
      url: `${config.apiUrl}/projects/${encodeURIComponent(config.projectId!)}/sessions/${encodeURIComponent(sessionId)}/wip`,
      token,
      runtimeCommand: config.runtime.command,
      intervalMs: wip.intervalMs,
      logger: logger.child({ component: 'checkpoint' }),
      stopRuntime: () => supervisor.stop(),
    });
  let checkpointer = config.autoClone && repo && config.apiUrl && config.projectId && config.sessionId ? checkpointerOf(config.sessionId, config.token, config.wip) : undefined;
  const sessions: { last: string | undefined } = { last: undefined };
  let refreshQueue: Promise<unknown> = Promise.resolve();

  /** opencode's config dirs marked installed (runtime-deps.ts): 'marked' when the daemon wrote the marks. */
  const markConfigDir = (dir: string) =>
    markRuntimeDepsInstalled(dir, config.workspace).catch((err: Error) => (logger.warn({ dir, err: err.message }, 'runtime config dir not prepared'), 'kept' as const));
  const homeConfigDir = path.join(config.runtime.home, '.config', 'opencode');

  const resolveConfigDir = async () => {
    const r = await loadAgentConfigDir(config.workspace);
    if (r.fallback) logger.warn('svc.toml [agent] config_dir must be a relative path inside the repo; using the default');
    configDir = r.dir;
    logger.info({ config_dir: configDir }, 'agent config dir');
    if (opencode) for (const dir of [configDir, homeConfigDir]) await markConfigDir(dir);
  };

  const control: ControlDeps = {
    get token() {
      return key.value;
    },
    logger: logger.child({ component: 'control' }),
    health,
    runtime: {
      state: () => agentState(),
      restart: (opts) => (booted && !stopping ? supervisor.restart(opts) : Promise.resolve()),
    },
    client,
    env: runtimeEnv,
    sessions,
    agentName: config.agentName,
    agentModel: config.agentModel,
    abortTimeoutMs: config.abortTimeoutMs,
    ...(checkpointer ? { checkpoint: (final: boolean) => checkpointer!.checkpoint(final) } : {}),
    // One refresh at a time: two concurrent fetches would fight over git's locks.
    refresh: () => {
      const run = refreshQueue.then(refreshOnce, refreshOnce);
      refreshQueue = run.catch(() => undefined);
      return run;
    },
    ...(config.pool ? { claim: (body: ClaimBody) => claim(body) } : {}),
  };

  let claimed = false;
  let bootConfigDir = configDir;
  let poolMarked: string | undefined;
  /** `POST /svc/claim`: once; the key first, so a failure later leaves nothing the pool key opens. */
  async function claim(body: ClaimBody): Promise<{ branch: string | null; commit: string | null }> {
    if (claimed) throw new RepoError('bad_ref', 'this sandbox was claimed already');
    claimed = true;
    key.value = body.token;
    runtimeEnv.apply(body.env, []);
    await writeSessionEnv(config.runtime.home, body.env);
    control.agentName = body.agent_name;
    control.agentModel = body.agent_model;
    repo = {
      workspace: config.workspace,
      repoUrl: config.repoUrl!,
      branch: body.branch,
      baseRef: body.base_ref ?? config.baseRef,
      apiUrl: config.apiUrl,
      projectId: config.projectId,
      token: body.token,
      agentCredentialHelper: process.argv[1] ? helperCommand(process.execPath, process.argv[1]) : undefined,
    };
    const log = logger.child({ component: 'claim' });
    await booted$;
    if (body.llm_key) llmKey.value = body.llm_key;
    if (poolMarked) await unmarkRuntimeDeps(poolMarked);
    await cloneRepo(repo, log);
    repoReady = true;
    health.invalidate();
    await resolveConfigDir();
    // From here the session's work is saved: periodically, and once more before a stop.
    if (config.apiUrl && config.projectId && !stopping) {
      const cp = checkpointerOf(body.session_id, body.token, wipOf(body.env, config.wip));
      checkpointer = cp;
      control.checkpoint = (final: boolean) => cp.checkpoint(final);
      cp.start();
    }
    // A repository that moves the agent's config dir needs the runtime to start again to see it;
    // one with runtime config of its own needs the warmed instance loaded again.
    if (configDir !== bootConfigDir) {
      await supervisor.restart();
      void warm();
    } else if (opencode && (await tracksRuntimeConfig(config.workspace, configDir))) {
      await client.disposeInstance().catch((err: Error) => log.warn({ err: err.message }, 'runtime instance not reloaded'));
      void warm();
    }
    const r = await health.body();
    log.info({ session_id: body.session_id, branch: r.branch }, 'claimed for a session');
    return { branch: r.branch, commit: r.commit };
  }

  async function refreshOnce(): Promise<{ before: string | null; after: string | null }> {
    if (!repo) throw new RepoError('not_a_repo', 'SVC_REPO_URL is not set: there is no session branch to re-pull.');
    const r = await pullSessionBranch(repo, logger.child({ component: 'repo' }));
    health.invalidate();
    await resolveConfigDir();
    if (booted && !stopping) await supervisor.restart();
    return r;
  }

  const httpServer: http.Server = createDaemonServer({
    control,
    logger,
    get token() {
      return key.value;
    },
    runtimePort: config.runtime.port,
    ownPort: config.servicePort,
    agentState,
  });
  const pool = new UpstreamPool();
  const listener = new DaemonListener(httpServer, {
    get token() {
      return key.value;
    },
    runtimePort: config.runtime.port,
    ownPort: config.servicePort,
    agentState,
    now: () => Math.floor(Date.now() / 1000),
    pool,
    logger: logger.child({ component: 'proxy' }),
    isLocal: isControlPath,
  });
  const server = listener.server;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.servicePort, config.bindHost, () => {
      server.off('error', reject);
      resolve();
    });
  });
  server.on('error', (err) => logger.error({ err }, 'listener error'));
  // A sandbox in a network namespace of its own: the server dials this socket (bound from its directory).
  if (config.daemonSocket) await listener.listenOnSocket(config.daemonSocket);
  const port = (server.address() as AddressInfo).port;
  logger.info({ port, runtime_port: config.runtime.port }, 'svc-agent listening');

  const boot = async () => {
    await mkdir(config.runtime.home, { recursive: true });
    await mkdir(config.workspace, { recursive: true });
    if (config.pool) {
      // No credentials yet: an empty repository with its origin; the claim fetches.
      await git(['init', '-q', config.workspace], {});
      if (config.repoUrl) await git(['remote', 'add', 'origin', config.repoUrl], { cwd: config.workspace }).catch(() => undefined);
      if (opencode) {
        // Nothing to download at boot (runtime-deps.ts); the workspace's marks go before the claim's checkout.
        await markConfigDir(homeConfigDir);
        poolMarked = (await markConfigDir(configDir)) === 'marked' ? configDir : undefined;
      }
      runtimeEnv.apply(await prepareShellProfile(config.runtime.home), []);
      bootConfigDir = configDir;
    } else {
      const clone = config.autoClone && repo ? cloneWithRetries(repo, config.cloneAttempts, logger.child({ component: 'repo' })) : Promise.resolve();
      // A quick question (one try, 3 s) while the clone runs: only a sure "nothing saved" lets
      // the runtime start early; else the full answer comes after the clone, as the server is back.
      const probe = checkpointer && !stopping ? await checkpointer.fetchSaved(1, 3_000) : null;
      // opencode reads nothing of the workspace until a request comes, and none is forwarded
      // before the repo is ready (agentState): it boots while the clone runs, unless a saved
      // conversation must be in place before it starts.
      if (opencode && probe === null && !stopping) {
        await markConfigDir(homeConfigDir);
        bootConfigDir = configDir;
        booted = true;
        await supervisor.start();
      }
      await clone;
      const saved = probe !== undefined ? probe : checkpointer && !stopping ? await checkpointer.fetchSaved() : null;
      // The saved workspace and conversation go back before the agent starts (and before health says the repo is ready).
      if (checkpointer && saved && !stopping) await checkpointer.restore(saved);
      await resolveConfigDir();
      repoReady = true;
      health.invalidate();
      // Booted with the default config dir: a repository that names another needs a start that sees it.
      if (booted && configDir !== bootConfigDir && !stopping) await supervisor.restart();
    }
    if (stopping) return;
    if (!booted) {
      booted = true;
      await supervisor.start();
    }
    checkpointer?.start();
    // A pool sandbox is ready only once warm; a session's sandbox warms while the platform sees it start.
    if (config.pool) await warm();
    else void warm();
    if (config.bootstrapSession && config.initialPrompt) await bootstrapSession(config.initialPrompt);
  };

  const bootstrapSession = async (prompt: string) => {
    for (let attempt = 1; attempt <= 5 && !stopping; attempt++) {
      if (!(await supervisor.waitUntilRunning(120_000))) continue;
      try {
        const id = await client.createSession();
        await client.promptAsync(id, prompt, { agent: config.agentName, model: config.agentModel });
        sessions.last = id;
        logger.info({ session_id: id }, 'bootstrap agent session opened with the initial prompt');
        return;
      } catch (err) {
        logger.warn({ attempt, err: (err as Error).message }, 'bootstrap session failed; retrying');
        await sleep(500 * attempt);
      }
    }
    logger.error('bootstrap session could not be opened');
  };

  const bootPromise = boot().catch((err: unknown) => logger.error({ err }, 'boot failed'));
  booted$ = bootPromise;

  return {
    port,
    booted: bootPromise,
    killNow: () => supervisor.killNow(),
    stop: async () => {
      stopping = true;
      checkpointer?.stop();
      listener.close();
      httpServer.closeAllConnections();
      pool.close();
      await relay?.close();
      await supervisor.stop();
    },
  };
}

async function cloneWithRetries(repo: RepoSettings, attempts: number, log: Logger): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await cloneRepo(repo, log);
      log.info({ workspace: repo.workspace, branch: repo.branch }, 'repository ready');
      return;
    } catch (err) {
      log.error({ attempt, err: (err as Error).message }, 'clone failed');
      if (attempt >= attempts) {
        log.error('giving up on the clone; the runtime starts on an empty workspace');
        return;
      }
      await sleep(Math.min(10_000, 1_000 * 2 ** (attempt - 1)));
    }
  }
}
