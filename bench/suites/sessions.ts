/**
 * `npm run bench -- sessions`: create → `running` on the `process` provider (the daemon
 * answers and the workspace is on the session branch), p50/p99, next to the floor measured
 * in the same run: spawning `svc-entrypoint` by hand with the same kind of environment and
 * waiting for its health to show the clone. Also where the time goes (from the session's
 * own events) and create → agent ready (the scripted runtime answering through the
 * server's proxy). The scripted runtime stands in for opencode so the figures measure the
 * platform, not opencode's own 3 s boot.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../infra/config.js';
import { silentLogger } from '../../lib/logger.js';
import { bootstrapUser } from '../../services/accounts/service.js';
import { freePort } from '../../lib/net.js';
import { projectRoot } from '../../lib/paths.js';
import { startServer } from '../../ops/server.js';
import { startBenchPostgres } from '../support/pg.js';
import { benchRepo } from '../support/git-fixture.js';
import { median, percentile, type BenchRow, type BenchSuite } from '../types.js';

const fakeRuntime = path.join(projectRoot, 'dist', 'test', 'agentd', 'support', 'fake-runtime.js');
const entrypoint = path.join(projectRoot, 'dist', 'agentd', 'svc-entrypoint.js');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function json(url: string, init: RequestInit = {}): Promise<{ status: number; body: any }> {
  const res = await fetch(url, init);
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

/** The floor: svc-entrypoint spawned by hand, cloning the repo on a branch, until health shows the commit. */
async function floorOnce(repoUrl: string, branch: string): Promise<number> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'svc-bench-floor-'));
  const [port, agentPort] = [await freePort(), await freePort()];
  const started = performance.now();
  const child = spawn(process.execPath, [entrypoint], {
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: path.join(dir, 'home'),
      SVC_TOKEN: randomBytes(24).toString('hex'),
      SVC_SERVICE_PORT: String(port),
      SVC_AGENT_PORT: String(agentPort),
      SVC_BIND_HOST: '127.0.0.1',
      SVC_WORKSPACE: path.join(dir, 'workspace'),
      SVC_AGENT_HOME: path.join(dir, 'home'),
      SVC_AGENT_RUNTIME: fakeRuntime,
      SVC_PROJECT_AUTO_CLONE: '1',
      SVC_REPO_URL: repoUrl,
      SVC_BRANCH_NAME: branch,
      SVC_BASE_REF: 'main',
    },
    stdio: 'ignore',
    detached: true,
  });
  try {
    for (;;) {
      const h = await json(`http://127.0.0.1:${port}/svc/health`).catch(() => null);
      if (h?.body?.branch === branch && h.body.commit) return performance.now() - started;
      if (performance.now() - started > 60_000) throw new Error('floor sandbox never became healthy');
      await sleep(20);
    }
  } finally {
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      /* gone */
    }
    await rm(dir, { recursive: true, force: true });
  }
}

export const run: BenchSuite = async ({ quick }) => {
  const n = quick ? 5 : 20;
  const provider = (process.env.SVC_BENCH_PROVIDER ?? 'bwrap') as 'bwrap' | 'process';
  const pgs = await startBenchPostgres('svc-bench-sessions-');
  const repo = await benchRepo();
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'svc-bench-sess-data-'));
  const { db, url } = await pgs.database('sessions');
  const config = loadConfig({
    PORT: '0', HOST: '127.0.0.1', SVC_DATA_DIR: dataDir, LOG_LEVEL: 'silent', SVC_ALLOW_FILE_REPOS: '1',
    SVC_AGENT_RUNTIME: fakeRuntime, SVC_SESSION_CAP: '1000',
    // bwrap (the default): the server reaches the daemon through its socket; SVC_BENCH_PROVIDER=process for the old figure.
    SVC_SANDBOX_PROVIDER: provider, SVC_ALLOW_UNISOLATED: '1',
  });
  const server = await startServer({ config, logger: silentLogger, roles: { api: true, worker: true }, database: { db, url, embedded: false, close: async () => {} } });
  try {
    const { token } = (await bootstrapUser(db, { email: 'bench@example.test' })).token;
    const h = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    await json(`${server.url}/v1/projects`, { method: 'POST', headers: h, body: JSON.stringify({ name: 'bench', slug: 'bench', repo_url: repo.url }) });
    const base = `${server.url}/v1/projects/bench/sessions`;

    // The floor runs interleaved with the sessions, so both see the same machine load.
    const floor: number[] = [];
    await repo.commit('floor', { 'floor.txt': 'x\n' });
    const toRunning: number[] = [];
    const toAgent: number[] = [];
    const phases = { branch: [] as number[], sandbox: [] as number[], healthy: [] as number[] };
    for (let i = 0; i < n + 1; i++) {
      const t0 = performance.now();
      const created = await json(base, { method: 'POST', headers: h, body: '{}' });
      if (created.status !== 201) throw new Error(`create answered ${created.status}: ${JSON.stringify(created.body)}`);
      const id = created.body.session.session_id as string;
      let s: any;
      for (;;) {
        s = (await json(`${base}/${id}`, { headers: h })).body.session;
        if (s.status === 'running' || s.status === 'failed') break;
        await sleep(20);
      }
      if (s.status !== 'running') throw new Error(`session failed: ${JSON.stringify(s.error)}`);
      const running = performance.now() - t0;
      for (;;) {
        const r = await fetch(`${base}/${id}/agent/fake/hello`, { headers: h });
        await r.arrayBuffer();
        if (r.status === 200) break;
        await sleep(5);
      }
      const agent = performance.now() - t0;
      const events = (await json(`${base}/${id}/events`, { headers: h })).body.events as { type: string; recorded_at: string }[];
      const at = (type: string) => Date.parse(events.find((e) => e.type === type)!.recorded_at);
      await json(`${base}/${id}`, { method: 'DELETE', headers: h });
      const f = await floorOnce(repo.url, 'floor');
      if (i === 0) continue; // warm-up
      floor.push(f);
      toRunning.push(running);
      toAgent.push(agent);
      phases.branch.push(at('SessionBranchCut') - at('SessionCreated'));
      phases.sandbox.push(at('SandboxActive') - at('SessionBranchCut'));
      phases.healthy.push(at('SessionRunning') - at('SandboxActive'));
    }

    const p50 = median(toRunning);
    const f50 = median(floor);
    const row = (name: string, value: number, extra: Partial<BenchRow> = {}): BenchRow => ({ suite: 'sessions', name, value, unit: 'ms', ...extra });
    return [
      row(`create → running p50 (${provider})`, p50, { floor: f50, ratio: p50 / f50, goal: '<= 500 ms', met: p50 <= 500 }),
      row(`create → running p99 (${provider})`, percentile(toRunning, 99), { floor: percentile(floor, 99) }),
      row('  branch cut (p50)', median(phases.branch)),
      row('  sandbox started (p50)', median(phases.sandbox)),
      row('  daemon healthy on the branch (p50)', median(phases.healthy)),
      row('create → agent ready p50 (scripted runtime)', median(toAgent)),
      row('floor: svc-entrypoint + clone by hand p50', f50),
    ];
  } finally {
    await server.stop();
    await pgs.stop();
    await repo.cleanup();
    await rm(dataDir, { recursive: true, force: true });
  }
};
