/**
 * `npm run bench -- sessions`: what a user waits for. Per provider that
 * runs here (SVC_BENCH_PROVIDERS, default `process,bwrap`; `docker` when asked), pooled and
 * cold, with the real runtime (opencode from node_modules) and a streaming model behind the
 * server's gateway:
 *   - create → running: `POST …/sessions` until the session reads `running`;
 *   - create → agent answering: from the same `POST`, until the first streamed token of
 *     the model's reply arrives through `…/agent/event` (SSE), after `…/agent/session` and
 *     `…/agent/session/:id/prompt_async` through the same proxy;
 * next to the runtime's own boot measured in the same run (`opencode serve` spawned by
 * hand until `/global/health` answers). Targets: pooled p50 ≤ 1.0 s and p99 ≤ 2.0 s on
 * bwrap and process; cold ≤ 1.2× the runtime's boot alone.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { loadConfig, type Config } from '../../infra/config.js';
import { createSandboxProvider } from '../../infra/sandbox/registry.js';
import { markRuntimeDepsInstalled } from '../../agentd/runtime-deps.js';
import { handleOfPool } from '../../services/sessions/pool.js';
import type { PoolRow } from '../../sql/queries/pool.js';
import { silentLogger } from '../../lib/logger.js';
import { bootstrapUser } from '../../services/accounts/service.js';
import { freePort } from '../../lib/net.js';
import { projectRoot } from '../../lib/paths.js';
import { startServer } from '../../ops/server.js';
import { startBenchPostgres } from '../support/pg.js';
import { benchRepo } from '../support/git-fixture.js';
import { REPLY, startStreamModel } from '../support/stream-model.js';
import { median, percentile, type BenchRow, type BenchSuite } from '../types.js';

const opencode = path.join(projectRoot, 'node_modules', '.bin', 'opencode');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const KEY = 'sk-bench-upstream';

async function json(url: string, init: RequestInit = {}): Promise<{ status: number; body: any }> {
  const res = await fetch(url, init);
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

/**
 * The runtime alone, as the daemon starts it (a workspace with a commit, its config dir
 * marked installed, the provider at the model directly): `opencode serve` until
 * `/global/health` answers (`boot`), and on until the first token of its reply to a first
 * prompt (`answer`), through its own API with nothing of svc in between.
 */
async function runtimeBootOnce(modelUrl: string): Promise<{ boot: number; answer: number }> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'svc-bench-rt-'));
  // As the daemon leaves it: the runtime's config dir looks installed, so nothing is downloaded.
  await markRuntimeDepsInstalled(path.join(dir, 'home', '.config', 'opencode'));
  const ws = path.join(dir, 'ws');
  const git = (args: string[]) => new Promise((res) => spawn('git', args, { stdio: 'ignore', cwd: ws }).on('close', res).on('error', res));
  await mkdir(ws);
  await git(['init', '-q']);
  await writeFile(path.join(ws, 'README.md'), 'bench\n');
  await git(['add', '.']);
  await git(['-c', 'user.name=b', '-c', 'user.email=b@b', 'commit', '-qm', 'init']);
  const config = {
    provider: { svc: { npm: '@ai-sdk/openai-compatible', name: 'bench', options: { baseURL: modelUrl, apiKey: KEY }, models: { scripted: { name: 'scripted', tool_call: true } } } },
    model: 'svc/scripted',
    small_model: 'svc/scripted',
  };
  const port = await freePort();
  const t0 = performance.now();
  const child = spawn(opencode, ['serve', '--port', String(port), '--hostname', '127.0.0.1'], {
    cwd: ws,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', LANG: 'C.UTF-8', HOME: path.join(dir, 'home'), OPENCODE_DISABLE_AUTOUPDATE: '1', OPENCODE_CONFIG_CONTENT: JSON.stringify(config) },
    stdio: 'ignore',
    detached: true,
  });
  try {
    const base = `http://127.0.0.1:${port}`;
    for (;;) {
      const ok = await fetch(`${base}/global/health`, { signal: AbortSignal.timeout(2000) }).then((r) => r.ok, () => false);
      if (ok) break;
      if (performance.now() - t0 > 120_000) throw new Error('opencode serve never answered');
      await sleep(10);
    }
    const boot = performance.now() - t0;
    const answer = await firstReply(base, { 'content-type': 'application/json' }, t0, t0 + 120_000);
    return { boot, answer };
  } finally {
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      /* gone */
    }
    await rm(dir, { recursive: true, force: true });
  }
}

const replyPart = (line: string): boolean => {
  try {
    const e = JSON.parse(line.slice(6)) as { type?: string; properties?: { part?: { type?: string }; field?: string } };
    return (e.type === 'message.part.delta' || e.type === 'message.part.updated') && (e.properties?.part?.type ?? e.properties?.field) === 'text';
  } catch {
    return false;
  }
};

/** From the create to the first streamed token of the model's reply (not the title) through the agent proxy. */
async function agentAnswers(base: string, id: string, h: Record<string, string>, t0: number): Promise<number> {
  return firstReply(`${base}/${id}/agent`, h, t0, t0 + 120_000);
}

/** On a runtime's API at `agent`: its event stream (retried while it answers 503), a session, a prompt, the first token of the reply. */
async function firstReply(agent: string, h: Record<string, string>, t0: number, deadline: number): Promise<number> {
  // The event stream first (503 while the runtime boots), so the token cannot be missed.
  let events: Response;
  for (;;) {
    events = await fetch(`${agent}/event`, { headers: h.authorization ? { authorization: h.authorization } : {} });
    if (events.status === 200) break;
    await events.body?.cancel();
    if (performance.now() > deadline) throw new Error(`agent events answered ${events.status}`);
    await sleep(10);
  }
  const reader = events.body!.getReader();
  try {
    const s = await json(`${agent}/session`, { method: 'POST', headers: h, body: '{}' });
    if (s.status !== 200) throw new Error(`agent session answered ${s.status}: ${JSON.stringify(s.body)}`);
    const p = await fetch(`${agent}/session/${s.body.id}/prompt_async`, {
      method: 'POST',
      headers: h,
      body: JSON.stringify({ parts: [{ type: 'text', text: 'ping' }], model: { providerID: 'svc', modelID: 'scripted' } }),
    });
    await p.arrayBuffer();
    if (p.status >= 300) throw new Error(`prompt answered ${p.status}`);
    const dec = new TextDecoder();
    let pending = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) throw new Error('the event stream ended before the reply');
      pending += dec.decode(value, { stream: true });
      const lines = pending.split('\n');
      pending = lines.pop() ?? '';
      // The agent's reply: a text part of its message. The session's title (the runtime asks
      // the model for one first) carries the same words in a `session.updated`: not the answer.
      for (const line of lines) if (line.startsWith('data: ') && line.includes(REPLY) && replyPart(line)) return performance.now() - t0;
      if (performance.now() > deadline) throw new Error('no reply token within 120 s');
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
}

type Provider = 'process' | 'bwrap' | 'docker';

/** Pool sandboxes outlive a server stop (as sessions' do): the bench removes what it started, as the server's own provider would. */
async function killPool(db: { rows<R>(q: { text: string; values: unknown[] }): Promise<R[]> }, config: Config): Promise<void> {
  const provider = createSandboxProvider(config, { logger: silentLogger });
  for (const r of await db.rows<PoolRow>({ text: 'SELECT sandbox_id::text, provider, url, ref FROM pool_sandboxes', values: [] })) {
    await provider.destroy(handleOfPool(r)).catch(() => undefined);
  }
}

async function benchProvider(provider: Provider, n: number, pgs: Awaited<ReturnType<typeof startBenchPostgres>>, modelUrl: string): Promise<BenchRow[]> {
  const cold = await benchRepo();
  const pooled = await benchRepo();
  await pooled.commit('main', { 'svc.toml': '[sandbox]\npool = 1\n' });
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'svc-bench-sess-data-'));
  const { db, url } = await pgs.database(`sessions_${provider}`);
  const config = loadConfig({
    PORT: '0', HOST: '127.0.0.1', SVC_DATA_DIR: dataDir, LOG_LEVEL: 'silent', SVC_ALLOW_FILE_REPOS: '1', SVC_SESSION_CAP: '1000',
    SVC_SANDBOX_PROVIDER: provider, SVC_ALLOW_UNISOLATED: '1', SVC_SANDBOX_POOL_MAX: '1',
    // docker: the image's own runtime; process and bwrap: the host's.
    ...(provider === 'docker' ? {} : { SVC_AGENT_RUNTIME: opencode }),
    SVC_LLM_UPSTREAM_URL: modelUrl, SVC_LLM_UPSTREAM_KEY: KEY, SVC_LLM_MODEL: 'scripted', SVC_SESSION_PROVISION_TIMEOUT_SECONDS: '180',
  });
  const server = await startServer({ config, logger: silentLogger, roles: { api: true, worker: true }, database: { db, url, embedded: false, close: async () => {} } });
  try {
    const { token } = (await bootstrapUser(db, { email: 'bench@example.test' })).token;
    const h = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    for (const [slug, repo] of [['cold', cold], ['pooled', pooled]] as const) {
      const r = await json(`${server.url}/v1/projects`, { method: 'POST', headers: h, body: JSON.stringify({ name: slug, slug, repo_url: repo.url }) });
      if (r.status !== 201) throw new Error(`project ${slug}: ${JSON.stringify(r.body)}`);
      await json(`${server.url}/v1/projects/${slug}/manifest`, { headers: h });
    }
    const poolReady = async () => {
      const deadline = Date.now() + 180_000;
      while (!(await db.one({ text: "SELECT 1 FROM pool_sandboxes WHERE state = 'ready'", values: [] }))) {
        if (Date.now() > deadline) throw new Error('the pool never filled');
        await sleep(50);
      }
    };
    const results = { cold: { running: [] as number[], agent: [] as number[] }, pooled: { running: [] as number[], agent: [] as number[] } };
    const boot: number[] = [];
    const bootAnswer: number[] = [];
    let bootError: string | undefined;
    for (let i = 0; i < n + 1; i++) {
      for (const mode of ['cold', 'pooled'] as const) {
        // The pool refills after a claim (a boot and a warm-up): never measured while that runs.
        await poolReady();
        const base = `${server.url}/v1/projects/${mode}/sessions`;
        const t0 = performance.now();
        const created = await json(base, { method: 'POST', headers: h, body: '{}' });
        if (created.status !== 201) throw new Error(`create answered ${created.status}: ${JSON.stringify(created.body)}`);
        const id = created.body.session.session_id as string;
        let s: any;
        for (;;) {
          s = (await json(`${base}/${id}`, { headers: h })).body.session;
          if (s.status === 'running' || s.status === 'failed') break;
          await sleep(10);
        }
        if (s.status !== 'running') throw new Error(`${mode} session failed: ${JSON.stringify(s.error)}`);
        const running = performance.now() - t0;
        const agent = await agentAnswers(base, id, h, t0);
        await json(`${base}/${id}`, { method: 'DELETE', headers: h });
        if (i === 0) continue; // warm-up
        results[mode].running.push(running);
        results[mode].agent.push(agent);
      }
      // A runtime that never answers alone is a note on the rows, not the loss of the sessions' figures.
      if (i > 0) {
        await poolReady();
        const b = await runtimeBootOnce(modelUrl).catch((err: Error) => ((bootError = err.message), { boot: NaN, answer: NaN }));
        boot.push(b.boot);
        bootAnswer.push(b.answer);
      }
    }
    const booted = boot.filter(Number.isFinite);
    const b50 = median(booted);
    const answered = bootAnswer.filter(Number.isFinite);
    const a50 = median(answered);
    const row = (name: string, value: number, extra: Partial<BenchRow> = {}): BenchRow => ({ suite: 'sessions', name: `${provider}: ${name}`, value, unit: 'ms', ...extra });
    const strict = provider !== 'docker';
    const pa50 = median(results.pooled.agent);
    const pa99 = percentile(results.pooled.agent, 99);
    const ca50 = median(results.cold.agent);
    return [
      row('runtime boot alone (opencode serve) p50', b50, bootError ? { notes: bootError } : {}),
      row('runtime boot → its first answer alone p50', a50, { notes: 'opencode serve by hand, the model direct: health, then a session and a prompt until the first token of the reply' }),
      row('pooled create → running p50', median(results.pooled.running)),
      row('pooled create → running p99', percentile(results.pooled.running, 99)),
      row('pooled create → agent answering p50', pa50, strict ? { goal: '<= 1000 ms', met: pa50 <= 1000 } : {}),
      row('pooled create → agent answering p99', pa99, strict ? { goal: '<= 2000 ms', met: pa99 <= 2000 } : {}),
      row('cold create → running p50', median(results.cold.running)),
      row('cold create → running p99', percentile(results.cold.running, 99)),
      row('cold create → agent answering p50', ca50, { floor: b50, ratio: ca50 / b50, goal: '<= 1.2x runtime boot', met: ca50 <= 1.2 * b50 }),
      row('cold create → agent answering p99', percentile(results.cold.agent, 99), { floor: percentile(booted, 99) }),
      row('cold create → agent answering p50, against the runtime answering alone', ca50, { floor: a50, ratio: ca50 / a50, goal: '<= 1.2x runtime alone', met: ca50 <= 1.2 * a50 }),
    ];
  } finally {
    await server.stop();
    await killPool(db, config);
    await cold.cleanup();
    await pooled.cleanup();
    await rm(dataDir, { recursive: true, force: true });
  }
}

export const run: BenchSuite = async ({ quick }) => {
  const n = quick ? 3 : 10;
  if (!existsSync(opencode)) throw new Error(`${opencode} is not installed (npm install)`);
  const providers = (process.env.SVC_BENCH_PROVIDERS ?? 'process,bwrap').split(',').map((p) => p.trim()).filter(Boolean) as Provider[];
  const pgs = await startBenchPostgres('svc-bench-sessions-');
  const model = await startStreamModel(KEY);
  const rows: BenchRow[] = [];
  try {
    for (const p of providers) {
      try {
        rows.push(...(await benchProvider(p, n, pgs, model.url)));
      } catch (err) {
        rows.push({ suite: 'sessions', name: `${p}: not measured`, value: NaN, unit: 'ms', notes: (err as Error).message.slice(0, 300) });
      }
    }
    return rows;
  } finally {
    await model.close();
    await pgs.stop();
  }
};
