/**
 * `npm run bench -- agent-loop`: what a user waits for from `POST …/sessions` with a prompt
 * to the change request the agent opened, per provider that runs here, next to the floor
 * measured in the same run: the agent runtime's own boot (`opencode serve` spawned by hand
 * until it answers). The agent is the real runtime; the model is the tests' scripted one
 * (commit, push, `svc cr open`), reached through the server's model gateway.
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../infra/config.js';
import { probeBwrap } from '../../infra/sandbox/bwrap.js';
import { silentLogger } from '../../lib/logger.js';
import { freePort } from '../../lib/net.js';
import { projectRoot } from '../../lib/paths.js';
import { startServer } from '../../ops/server.js';
import { bootstrapUser } from '../../services/accounts/service.js';
import { bashStep as bash, startScriptedModel } from '../../test/support/scripted-model.js';
import { startBenchPostgres } from '../support/pg.js';
import { benchRepo } from '../support/git-fixture.js';
import { median, type BenchRow, type BenchSuite } from '../types.js';

const opencode = path.join(projectRoot, 'node_modules', '.bin', 'opencode');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const K = 'sk-bench-upstream';

async function json(url: string, init: RequestInit = {}): Promise<{ status: number; body: any }> {
  const res = await fetch(url, init);
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

/** The floor: `opencode serve` spawned by hand in an empty HOME until it answers `GET /session`. */
async function runtimeBootOnce(): Promise<number> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'svc-bench-oc-'));
  const port = await freePort();
  const t0 = performance.now();
  const child = spawn(opencode, ['serve', '--port', String(port), '--hostname', '127.0.0.1'], {
    cwd: dir,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: dir },
    stdio: 'ignore',
    detached: true,
  });
  try {
    for (;;) {
      // Each probe is bounded: a request made while it boots can wait forever.
      const ok = await fetch(`http://127.0.0.1:${port}/session`, { signal: AbortSignal.timeout(2000) }).then((r) => r.ok, () => false);
      if (ok) return performance.now() - t0;
      if (performance.now() - t0 > 120_000) throw new Error('opencode serve never answered');
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

function providersHere(): string[] {
  const out = ['process'];
  if (probeBwrap().ok) out.push('bwrap');
  try {
    execFileSync('docker', ['image', 'inspect', 'svc-sandbox:local'], { stdio: 'ignore' });
    out.push('docker');
  } catch {
    /* no engine or no image: not measured */
  }
  return (process.env.SVC_BENCH_PROVIDERS?.split(',') ?? out).filter((p) => out.includes(p));
}

export const run: BenchSuite = async ({ quick }) => {
  if (!existsSync(opencode)) throw new Error(`${opencode} is not installed`);
  const n = quick ? 2 : 5;
  const model = await startScriptedModel({
    key: K,
    models: ['scripted'],
    script: [
      bash('echo "$RANDOM" > "agent-$(date +%s%N).txt" && git add -A && git commit -q -m "Agent change" && echo committed'),
      bash('git push -q origin HEAD && echo pushed'),
      bash('svc cr open --title "Agent change" --json'),
      { text: 'Opened it.' },
    ],
  });
  const pgs = await startBenchPostgres('svc-bench-loop-');
  const rows: BenchRow[] = [];
  const row = (name: string, value: number, extra: Partial<BenchRow> = {}): BenchRow => ({ suite: 'agent-loop', name, value, unit: 'ms', ...extra });
  try {
    for (const provider of providersHere()) {
      const repo = await benchRepo();
      const dataDir = await mkdtemp(path.join(os.tmpdir(), 'svc-bench-loop-data-'));
      const { db, url } = await pgs.database(`loop_${provider}`);
      const config = loadConfig({
        PORT: '0', HOST: '127.0.0.1', SVC_DATA_DIR: dataDir, LOG_LEVEL: 'silent', SVC_ALLOW_FILE_REPOS: '1',
        SVC_SESSION_CAP: '1000', SVC_SANDBOX_PROVIDER: provider, SVC_ALLOW_UNISOLATED: '1',
        SVC_SESSION_PROVISION_TIMEOUT_SECONDS: '300',
        ...(provider === 'docker' ? {} : { SVC_AGENT_RUNTIME: opencode }),
        SVC_LLM_UPSTREAM_URL: model.url, SVC_LLM_UPSTREAM_KEY: K, SVC_LLM_MODEL: 'scripted',
      });
      const server = await startServer({ config, logger: silentLogger, roles: { api: true, worker: true }, database: { db, url, embedded: false, close: async () => {} } });
      try {
        const { token } = (await bootstrapUser(db, { email: 'bench@example.test' })).token;
        const h = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
        await json(`${server.url}/v1/projects`, { method: 'POST', headers: h, body: JSON.stringify({ name: 'loop', slug: 'loop', repo_url: repo.url }) });
        const base = `${server.url}/v1/projects/loop`;
        const toCr: number[] = [];
        const boot: number[] = [];
        const floor: number[] = [];
        for (let i = 0; i < n; i++) {
          const t0 = performance.now();
          const created = await json(`${base}/sessions`, { method: 'POST', headers: h, body: JSON.stringify({ prompt: 'Make a change and open a change request' }) });
          if (created.status !== 201) throw new Error(`create answered ${created.status}: ${JSON.stringify(created.body)}`);
          const id = created.body.session.session_id as string;
          for (;;) {
            const crs = (await json(`${base}/change-requests?status=all`, { headers: h })).body.change_requests as { origin_session_id: string | null }[];
            if (crs.some((c) => c.origin_session_id === id)) break;
            const s = (await json(`${base}/sessions/${id}`, { headers: h })).body.session;
            if (s.status === 'failed') throw new Error(`${provider}: session failed: ${JSON.stringify(s.error)}`);
            if (performance.now() - t0 > 600_000) throw new Error(`${provider}: no CR after 10 minutes`);
            await sleep(100);
          }
          toCr.push(performance.now() - t0);
          const events = (await json(`${base}/sessions/${id}/events`, { headers: h })).body.events as { type: string; recorded_at: string }[];
          const at = (type: string) => Date.parse(events.find((e) => e.type === type)?.recorded_at ?? 'x');
          boot.push(at('SessionAgentReady') - at('SessionRunning'));
          await json(`${base}/sessions/${id}`, { method: 'DELETE', headers: h });
          // Interleaved, so the floor sees the same machine load.
          floor.push(await runtimeBootOnce());
        }
        const p50 = median(toCr);
        const f50 = median(floor);
        rows.push(
          row(`create → CR opened by the agent p50 (${provider})`, p50, { floor: f50, ratio: p50 / f50, notes: `${n} sessions; floor: opencode serve boot by hand` }),
          row(`  runtime boot inside the sandbox p50 (${provider})`, median(boot), { floor: f50, ratio: median(boot) / f50 }),
        );
      } finally {
        await server.stop();
        await repo.cleanup();
        await rm(dataDir, { recursive: true, force: true });
      }
    }
  } finally {
    await pgs.stop();
    await model.close();
  }
  return rows;
};
