/**
 * `npm run bench -- git-http`: clone and fetch of the synthetic repository (the `git`
 * suite's: 20k files, 2k commits) from a managed project, over the server's smart HTTP,
 * against the same bare repository over `file://` and over `git http-backend` directly,
 * in one run. Goal: <= 1.2x http-backend. Also the server's RSS while a pack streams
 * (it must stay flat: the pack is never buffered).
 *
 * clone: `git clone --no-checkout` of everything (transport and pack, not the checkout).
 * fetch: the 50 commits of `main` that a clone holding only `feature` lacks.
 */
import { spawn } from 'node:child_process';
import { cp, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { loadConfig } from '../../infra/config.js';
import { silentLogger } from '../../lib/logger.js';
import { bootstrapUser } from '../../services/accounts/service.js';
import { startServer, type RunningServer } from '../../ops/server.js';
import { median, type BenchRow, type BenchSuite } from '../types.js';
import { startBenchPostgres } from '../support/pg.js';
import { startHttpBackend } from '../support/http-backend.js';
import { syntheticRepo } from './git.js';

const ENV = { PATH: process.env.PATH ?? '/usr/bin:/bin', GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null', GIT_TERMINAL_PROMPT: '0', HOME: os.tmpdir() };

function git(args: string[], cwd?: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn('git', args, { cwd, env: ENV, stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    child.stderr.on('data', (c: Buffer) => (err += c.toString()));
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`git ${args[0]} failed (${code}): ${err.replace(/svc_pat_[A-Za-z0-9_-]+/g, '[token]')}`))));
  });
}

const withAuth = (url: string, token: string) => {
  const u = new URL(url);
  u.username = 'x';
  u.password = token;
  return u.toString();
};

export const run: BenchSuite = async ({ quick }) => {
  const shape = quick ? { files: 2_000, commits: 200, branchCommits: 10 } : { files: 20_000, commits: 2_000, branchCommits: 50 };
  const n = quick ? 3 : 9;
  const synthetic = await syntheticRepo(shape);
  const rows: BenchRow[] = [];
  const pgb = await startBenchPostgres('svc-bench-git-http-');
  const scratch = await mkdtemp(path.join(os.tmpdir(), 'svc-bench-git-http-'));
  let server: RunningServer | undefined;
  let backend: Awaited<ReturnType<typeof startHttpBackend>> | undefined;
  try {
    const { db, url } = await pgb.database('svc', { max: 10 });
    const dataDir = path.join(scratch, 'data');
    const config = loadConfig({ PORT: '0', HOST: '127.0.0.1', SVC_DATA_DIR: dataDir, LOG_LEVEL: 'silent', DATABASE_URL: url });
    server = await startServer({ config, logger: silentLogger, roles: { api: true, worker: true }, database: { db, url, embedded: false, close: async () => {} } });
    const { token } = (await bootstrapUser(db, { email: 'bench@example.test' })).token;
    const res = await fetch(`${server.url}/v1/projects`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'bench', slug: 'bench' }),
    });
    const { project } = (await res.json()) as { project: { project_id: string; repo_url: string } };
    // The managed repository gets the synthetic history (as a pack, as a push would leave it).
    const served = path.join(dataDir, 'repos', `${project.project_id}.git`);
    await git(['fetch', '--quiet', synthetic, '+refs/heads/*:refs/heads/*'], served);
    backend = await startHttpBackend(path.dirname(served), token);

    const targets: Array<[string, string]> = [
      ['server', withAuth(project.repo_url, token)],
      ['http-backend', withAuth(`${backend.url}/${path.basename(served)}`, token)],
      ['file://', pathToFileURL(served).href],
    ];
    // A clone holding only `feature`, copied fresh before each fetch.
    const partial = path.join(scratch, 'partial.git');
    await git(['clone', '--quiet', '--bare', '--single-branch', '--branch', 'feature', pathToFileURL(served).href, partial]);

    const clone: Record<string, number[]> = {};
    const fetchMs: Record<string, number[]> = {};
    let rssBase = 0;
    let rssPeak = 0;
    for (let i = 0; i < n; i++) {
      // Interleaved, and each round starts with the next transport: load on a shared machine
      // and the cost of the previous round's clean-up hit every transport alike.
      for (const [name, target] of [...targets.slice(i % targets.length), ...targets.slice(0, i % targets.length)]) {
        const dest = path.join(scratch, `clone-${i}-${name.replace(/\W/g, '')}`);
        let sampler: NodeJS.Timeout | undefined;
        if (name === 'server') {
          global.gc?.();
          rssBase = Math.max(rssBase, process.memoryUsage().rss);
          sampler = setInterval(() => (rssPeak = Math.max(rssPeak, process.memoryUsage().rss)), 5);
        }
        const t0 = performance.now();
        await git(['clone', '--quiet', '--no-checkout', target, dest]);
        (clone[name] ??= []).push(performance.now() - t0);
        if (sampler) clearInterval(sampler);
        await rm(dest, { recursive: true, force: true });

        const f = path.join(scratch, `fetch-${i}-${name.replace(/\W/g, '')}.git`);
        await cp(partial, f, { recursive: true });
        const t1 = performance.now();
        await git(['fetch', '--quiet', target, 'refs/heads/main:refs/heads/main'], f);
        (fetchMs[name] ??= []).push(performance.now() - t1);
        await rm(f, { recursive: true, force: true });
      }
    }
    const notes = `${shape.files} files, ${shape.commits} commits; median of ${n}, interleaved, rotating order`;
    for (const [op, times] of [['clone', clone], ['fetch', fetchMs]] as const) {
      const floor = median(times['http-backend']!);
      const value = median(times.server!);
      rows.push({ suite: 'git-http', name: `${op} over the server`, value, unit: 'ms', floor, ratio: value / floor, goal: '<= 1.2x http-backend', met: value <= 1.2 * floor, notes });
      rows.push({ suite: 'git-http', name: `${op} over file://`, value: median(times['file://']!), unit: 'ms', notes: 'reference: no HTTP at all' });
    }
    const grew = (rssPeak - rssBase) / 1024 / 1024;
    rows.push({ suite: 'git-http', name: 'server RSS growth while a clone streams', value: grew, unit: 'MiB', goal: 'flat (<= 32 MiB)', met: grew <= 32, notes: `RSS ${Math.round(rssBase / 1048576)} MiB before, peak ${Math.round(rssPeak / 1048576)} MiB` });
  } finally {
    await backend?.close();
    await server?.stop().catch(() => {});
    await pgb.stop();
    await rm(scratch, { recursive: true, force: true });
  }
  return rows;
};
