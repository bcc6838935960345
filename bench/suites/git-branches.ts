/**
 * `npm run bench -- git-branches`: git fetch and push on a managed repository with
 * thousands of branches (3,000; `--quick` 500), over the server's smart HTTP, against
 * `git http-backend` serving a maintained copy of the same repository (the floor), in one
 * run, interleaved. Goal: <= 1.2x http-backend. The branches arrive as many small pushes
 * through the server (each under receive.unpackLimit, so each leaves loose objects and
 * loose refs, as a busy project does); the same fetch is first timed on the repository as
 * the pushes left it (the server's own maintainer may have packed some of it meanwhile, as
 * in production), then after one full maintenance pass (infra/git/maintenance.ts).
 *
 * fetch: a no-op `git fetch` of every branch into a bare clone that has them all (the ref
 * advertisement of every branch, the negotiation; nothing to send).
 * push: one new branch with one new commit, then its deletion (so both repositories keep
 * their shape round after round); the p50 of the creating push.
 */
import { spawn } from 'node:child_process';
import { cp, mkdtemp, readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../infra/config.js';
import { maintainRepository } from '../../infra/git/maintenance.js';
import { silentLogger } from '../../lib/logger.js';
import { bootstrapUser } from '../../services/accounts/service.js';
import { startServer, type RunningServer } from '../../ops/server.js';
import { median, type BenchRow, type BenchSuite } from '../types.js';
import { startBenchPostgres } from '../support/pg.js';
import { startHttpBackend, type HttpBackend } from '../support/http-backend.js';

const ENV = {
  PATH: process.env.PATH ?? '/usr/bin:/bin',
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_CONFIG_GLOBAL: '/dev/null',
  GIT_TERMINAL_PROMPT: '0',
  HOME: os.tmpdir(),
  GIT_AUTHOR_NAME: 'Bench',
  GIT_AUTHOR_EMAIL: 'bench@example.test',
  GIT_COMMITTER_NAME: 'Bench',
  GIT_COMMITTER_EMAIL: 'bench@example.test',
};

function git(args: string[], cwd: string, input?: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn('git', args, { cwd, env: ENV, stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr!.on('data', (c: Buffer) => (err += c.toString()));
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve(out.trim()) : reject(new Error(`git ${args[0]} failed (${code}): ${err.replace(/svc_pat_[A-Za-z0-9_-]+/g, '[token]')}`))));
    if (input !== undefined) child.stdin!.end(input);
  });
}

const withAuth = (url: string, token: string) => {
  const u = new URL(url);
  u.username = 'x';
  u.password = token;
  return u.toString();
};

const timed = async (fn: () => Promise<unknown>): Promise<number> => {
  const t0 = performance.now();
  await fn();
  return performance.now() - t0;
};

/** Loose objects, packs and loose branch refs of a bare repository. */
async function shapeOf(dir: string): Promise<string> {
  const counts = await git(['count-objects', '-v'], dir);
  const get = (k: string) => Number(new RegExp(`^${k}: (\\d+)$`, 'm').exec(counts)![1]);
  const looseRefs = (await readdir(path.join(dir, 'refs', 'heads'), { recursive: true, withFileTypes: true })).filter((e) => e.isFile()).length;
  return `${get('count')} loose objects, ${get('packs')} packs, ${looseRefs} loose refs`;
}

export const run: BenchSuite = async ({ quick }) => {
  const BRANCHES = quick ? 500 : 3_000;
  const PER_PUSH = 50; // one commit each: 50 objects, under receive.unpackLimit (100)
  const n = quick ? 5 : 11;
  const rows: BenchRow[] = [];
  const pgb = await startBenchPostgres('svc-bench-git-branches-');
  const scratch = await mkdtemp(path.join(os.tmpdir(), 'svc-bench-git-branches-'));
  let server: RunningServer | undefined;
  let backend: HttpBackend | undefined;
  try {
    const { db, url } = await pgb.database('svc', { max: 10 });
    const dataDir = path.join(scratch, 'data');
    const config = loadConfig({ PORT: '0', HOST: '127.0.0.1', SVC_DATA_DIR: dataDir, LOG_LEVEL: 'silent', DATABASE_URL: url });
    server = await startServer({ config, logger: silentLogger, roles: { api: true, worker: true }, database: { db, url, embedded: false, close: async () => {} } });
    const { token } = (await bootstrapUser(db, { email: 'bench@example.test' })).token;
    const res = await fetch(`${server.url}/v1/projects`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'branches', slug: 'branches' }),
    });
    const { project } = (await res.json()) as { project: { project_id: string; repo_url: string } };
    const served = path.join(dataDir, 'repos', `${project.project_id}.git`);
    const serverUrl = withAuth(project.repo_url, token);

    // The branches, made by one fast-import in a work repository, pushed through the server in small pushes.
    const work = path.join(scratch, 'work');
    await git(['init', '-q', '-b', 'main', work], scratch);
    await git(['commit', '-q', '--allow-empty', '-m', 'root'], work);
    await git(['push', '-q', serverUrl, 'main'], work);
    const root = await git(['rev-parse', 'main'], work);
    let stream = '';
    for (let i = 0; i < BRANCHES; i++) {
      const msg = `branch ${i}\n`;
      stream += `commit refs/heads/b${i}\ncommitter Bench <bench@example.test> ${1_700_000_000 + i} +0000\ndata ${msg.length}\n${msg}from ${root}\n\n`;
    }
    await git(['fast-import', '--quiet'], work, stream);
    for (let i = 0; i < BRANCHES; i += PER_PUSH) {
      const specs = Array.from({ length: Math.min(PER_PUSH, BRANCHES - i) }, (_, k) => `b${i + k}:refs/heads/b${i + k}`);
      await git(['push', '-q', serverUrl, ...specs], work);
    }
    const unmaintainedShape = await shapeOf(served);

    // A bare clone holding every branch: the fetching side (packed, so only the served side varies).
    const clone = path.join(scratch, 'clone.git');
    await git(['clone', '-q', '--bare', serverUrl, clone], scratch);
    await git(['config', 'remote.origin.fetch', '+refs/heads/*:refs/heads/*'], clone);
    await git(['repack', '-a', '-d', '-q'], clone);
    const fetchFrom = (u: string) => git(['fetch', '-q', u, '+refs/heads/*:refs/heads/*'], clone);

    // Before maintenance: the no-op fetch on the repository as the pushes left it.
    const before: number[] = [];
    for (let i = 0; i < n; i++) before.push(await timed(() => fetchFrom(serverUrl)));

    // One maintenance pass (what the worker's schedule or a burst runs), then the floor: a copy served by git http-backend.
    const pass = await maintainRepository(served, 'full');
    const maintainedShape = await shapeOf(served);
    const floorRoot = path.join(scratch, 'floor');
    await cp(served, path.join(floorRoot, 'copy.git'), { recursive: true });
    backend = await startHttpBackend(floorRoot, token);
    const floorUrl = withAuth(`${backend.url}/copy.git`, token);

    const targets: Array<[string, string]> = [
      ['server', serverUrl],
      ['http-backend', floorUrl],
    ];
    const fetchMs: Record<string, number[]> = {};
    const pushMs: Record<string, number[]> = {};
    for (let i = 0; i < n; i++) {
      // Interleaved, alternating which goes first: the machine's load hits both alike.
      for (const [name, target] of i % 2 ? [...targets].reverse() : targets) {
        (fetchMs[name] ??= []).push(await timed(() => fetchFrom(target)));
        await git(['commit-tree', '-p', root, '-m', `push ${name} ${i}`, `${root}^{tree}`], work).then((sha) => git(['update-ref', 'refs/heads/probe', sha], work));
        (pushMs[name] ??= []).push(await timed(() => git(['push', '-q', target, 'probe:refs/heads/bench-probe'], work)));
        await git(['push', '-q', target, ':refs/heads/bench-probe'], work);
      }
    }
    const notes = `${BRANCHES} branches pushed in ${Math.ceil(BRANCHES / PER_PUSH)} pushes of ${PER_PUSH}; median of ${n}, interleaved; served repository maintained (${pass.kind} pass ${Math.round(pass.ms)} ms): ${maintainedShape}`;
    for (const [op, times] of [['fetch (no-op, every branch)', fetchMs], ['push (one new branch)', pushMs]] as const) {
      const floor = median(times['http-backend']!);
      const value = median(times.server!);
      rows.push({ suite: 'git-branches', name: `${op} over the server, ${BRANCHES} branches`, value, unit: 'ms', floor, ratio: value / floor, goal: '<= 1.2x http-backend', met: value <= 1.2 * floor, notes });
    }
    const unmaintained = median(before);
    const maintainedFetch = median(fetchMs.server!);
    rows.push({
      suite: 'git-branches',
      name: `fetch (no-op) over the server before maintenance, ${BRANCHES} branches`,
      value: unmaintained,
      unit: 'ms',
      floor: maintainedFetch,
      ratio: unmaintained / maintainedFetch,
      notes: `as the pushes left it (${unmaintainedShape}; the server's own maintainer may have run meanwhile, as in production); floor: the same fetch after the pass`,
    });
  } finally {
    await backend?.close();
    await server?.stop().catch(() => {});
    await pgb.stop();
    await rm(scratch, { recursive: true, force: true });
  }
  return rows;
};
