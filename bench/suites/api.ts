/**
 * `npm run bench -- api`: the real server (`startServer`: API + merge worker, on an
 * embedded Postgres of its own) against a real bare repository on disk (`file://`), over
 * HTTP on loopback with keep-alive connections.
 *
 * - merge end to end, on a local file:// repository (published in place), a managed one
 *   and a remote over smart HTTP (pushed to): N sequential `POST .../merge` of distinct
 *   CRs, p50 / p99, each beside the raw plumbing of one merge on the same kind of
 *   repository (../support/merges.ts). The remote twice: CRs on branches never read before
 *   (the merge fetches them), and CRs whose merge preview was read first (the mirror holds
 *   both branches: no fetch). Goals: p50 <= 40 ms (local, managed), <= 60 ms (remote);
 *   p99 <= 120 ms.
 * - GET of an open CR (live refresh: both branch tips re-read on every request), 32
 *   concurrent connections, a fixed number of requests. Goal: >= 1,000 req/s. Floors:
 *   `GET /healthz` at the same concurrency (alternated with it, round by round; the notes
 *   give each round's ratio and the CPU per request of this process and of Postgres), and
 *   `git ls-remote` of the same repo. In the same rounds, three other reads (the project,
 *   its open CRs, `/v1/accounts/me`), each with its same-run ratio to `/healthz`.
 *   `SVC_BENCH_API_ONLY=get` runs these rows alone,
 *   `SVC_BENCH_API_ROUNDS` sets the rounds.
 * - create: `POST .../change-requests`, 16 concurrent connections.
 */
import http from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../infra/config.js';
import { silentLogger } from '../../lib/logger.js';
import { bootstrapUser } from '../../services/accounts/service.js';
import { runGit } from '../../lib/git-run.js';
import { managedRepoPath, reposDirOf } from '../../infra/git/managed-repo.js';
import { startServer, type RunningServer } from '../../ops/server.js';
import { type BenchRow, type BenchSuite } from '../types.js';
import { startBenchPostgres } from '../support/pg.js';
import { benchRepo, type BenchRepo } from '../support/git-fixture.js';
import { startHttpBackend, type HttpBackend } from '../support/http-backend.js';
import { mergeRows, type ApiJson } from '../support/merges.js';

interface Reply {
  status: number;
  body: string;
}

class Client {
  readonly agent: http.Agent;
  constructor(
    private readonly port: number,
    private readonly token: string,
    maxSockets: number,
  ) {
    this.agent = new http.Agent({ keepAlive: true, maxSockets });
  }

  request(method: string, urlPath: string, body?: unknown): Promise<Reply> {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    return new Promise((resolve, reject) => {
      const req = http.request(
        {
          host: '127.0.0.1',
          port: this.port,
          method,
          path: urlPath,
          agent: this.agent,
          headers: {
            authorization: `Bearer ${this.token}`,
            ...(payload !== undefined ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) } : {}),
          },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end(payload);
    });
  }

  async json<T>(method: string, urlPath: string, body: unknown, expect: number): Promise<T> {
    const r = await this.request(method, urlPath, body);
    if (r.status !== expect) throw new Error(`${method} ${urlPath}: expected ${expect}, got ${r.status}: ${r.body.slice(0, 300)}`);
    return JSON.parse(r.body) as T;
  }

  close(): void {
    this.agent.destroy();
  }
}

/** `total` calls of `fn` over `concurrency` loops; returns calls per second. */
async function throughput(total: number, concurrency: number, fn: (i: number) => Promise<void>): Promise<number> {
  let next = 0;
  const t = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < total) await fn(next++);
    }),
  );
  return total / (Number(process.hrtime.bigint() - t) / 1e9);
}

interface Run {
  rps: number;
  /** CPU microseconds per call: this process (bench client and server), and Postgres. */
  nodeUs: number;
  pgUs: number;
}

/** `throughput` with the CPU the calls cost, this process's and Postgres's. */
async function measured(pgb: { cpuSeconds(): Promise<number> }, total: number, concurrency: number, fn: (i: number) => Promise<void>): Promise<Run> {
  const pg0 = await pgb.cpuSeconds();
  const n0 = process.cpuUsage();
  const rps = await throughput(total, concurrency, fn);
  const n = process.cpuUsage(n0);
  const pg1 = await pgb.cpuSeconds();
  return { rps, nodeUs: (n.user + n.system) / total, pgUs: ((pg1 - pg0) * 1e6) / total };
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

interface Cr {
  cr_id: string;
  number: number;
  head_commit_sha: string | null;
  merge_commit_sha: string | null;
  status: string;
}

export const run: BenchSuite = async ({ quick }) => {
  const rows: BenchRow[] = [];
  const pgb = await startBenchPostgres('svc-bench-api-');
  let repo: BenchRepo | undefined;
  const extraRepos: BenchRepo[] = [];
  let backend: HttpBackend | undefined;
  let dataDir: string | undefined;
  let server: RunningServer | undefined;
  const clients: Client[] = [];
  try {
    const { db, url } = await pgb.database('svc', { max: 20 });
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'svc-bench-api-data-'));
    const config = loadConfig({ PORT: '0', HOST: '127.0.0.1', SVC_DATA_DIR: dataDir, LOG_LEVEL: 'silent', DATABASE_URL: url, SVC_ALLOW_FILE_REPOS: '1', SVC_REPO_ALLOW_LOCAL_NETWORKS: '1', SVC_REPO_ALLOW_HTTP_CREDENTIALS: '1', SVC_REPOS_DIR: path.join(dataDir, 'repos') });
    server = await startServer({
      config,
      logger: silentLogger,
      roles: { api: true, worker: true },
      database: { db, url, embedded: false, close: async () => {} },
    });
    const { token } = (await bootstrapUser(db, { email: 'bench@example.test', name: 'Bench' })).token;
    const client = new Client(server.port, token, 32);
    clients.push(client);

    repo = await benchRepo();
    const merges = quick ? 12 : 60;
    const floorRuns = quick ? 5 : 15;
    const createBranches = Array.from({ length: 16 }, (_, i) => `create-${i}`);
    await repo.branches([...createBranches, 'hot', 'hot-base'], 'main');

    const { project } = await client.json<{ project: { project_id: string } }>('POST', '/v1/projects', { name: 'bench', repo_url: repo.url }, 201);
    const crs = `/v1/projects/${project.project_id}/change-requests`;
    const open = async (head: string, base = 'main') =>
      (await client.json<{ change_request: Cr }>('POST', crs, { title: `Bench ${head}`, head_ref: head, base_ref: base }, 201)).change_request;

    // (a) merges, sequential, on each kind of repository. The managed project is made even
    // when they are skipped, so the server's repositories directory exists as in a full run.
    const only = process.env.SVC_BENCH_API_ONLY;
    const managed = (await client.json<{ project: { project_id: string } }>('POST', '/v1/projects', { name: 'bench-managed' }, 201)).project;
    const managedRepo = await benchRepo('svc-bench-managed-', { bare: managedRepoPath(reposDirOf(config), managed.project_id) });
    extraRepos.push(managedRepo);
    if (only !== 'get') {
      const api: ApiJson = (method, urlPath, body, expect) => client.json(method, urlPath, body, expect);
      rows.push(...(await mergeRows(api, { kind: 'local', label: 'local file:// repo, in place', repo, crs }, merges, floorRuns)));
      rows.push(...(await mergeRows(api, { kind: 'managed', label: 'managed repo', repo: managedRepo, crs: `/v1/projects/${managed.project_id}/change-requests` }, merges, floorRuns)));
      const remoteRepo = await benchRepo('svc-bench-remote-');
      extraRepos.push(remoteRepo);
      backend = await startHttpBackend(remoteRepo.root, 'bench-password');
      const authed = backend.url.replace('http://', 'http://x:bench-password@');
      const remote = (await client.json<{ project: { project_id: string } }>('POST', '/v1/projects', { name: 'bench-remote', repo_url: `${authed}/origin.git` }, 201)).project;
      rows.push(
        ...(await mergeRows(
          api,
          { kind: 'remote', label: 'remote over smart HTTP, push', repo: remoteRepo, crs: `/v1/projects/${remote.project_id}/change-requests`, floorPushUrl: `${authed}/floor-target.git` },
          merges,
          floorRuns,
        )),
      );
      rows.push(
        ...(await mergeRows(
          api,
          {
            kind: 'remote',
            label: 'remote over smart HTTP, push, CR previewed first',
            repo: remoteRepo,
            crs: `/v1/projects/${remote.project_id}/change-requests`,
            floorPushUrl: `${authed}/floor-target-2.git`,
            floorTarget: 'floor-target-2.git',
            previewFirst: true,
          },
          merges,
          floorRuns,
        )),
      );
    }

    if (only === 'merges') return rows; // iterating on merges alone

    // (b) GET of an open CR: both tips re-read on every request.
    const hot = await open('hot', 'hot-base');
    const getPath = `${crs}/${hot.number}`;
    const total = quick ? 1_000 : 6_000;
    const conns = 32;
    const get = async () => {
      const r = await client.request('GET', getPath);
      if (r.status !== 200) throw new Error(`GET ${getPath}: ${r.status} ${r.body.slice(0, 200)}`);
    };
    const health = async () => {
      const r = await client.request('GET', '/healthz');
      if (r.status !== 200) throw new Error(`GET /healthz: ${r.status}`);
    };
    // Three other reads on the same authentication path, measured in the same rounds: the
    // project, its open CRs (a page of one), and a route that names no project.
    const otherReads = [
      { name: 'GET project', path: `/v1/projects/${project.project_id}` },
      { name: 'GET open CRs of a project', path: `${crs}?status=open&per_page=1` },
      { name: 'GET /v1/accounts/me', path: '/v1/accounts/me' },
    ].map((o) => ({
      ...o,
      runs: [] as Run[],
      call: async () => {
        const r = await client.request('GET', o.path);
        if (r.status !== 200) throw new Error(`GET ${o.path}: ${r.status} ${r.body.slice(0, 200)}`);
      },
    }));
    await throughput(200, conns, get); // warm-up, opens the connections
    await throughput(200, conns, health);
    for (const o of otherReads) await throughput(200, conns, o.call);
    const rounds = Number(process.env.SVC_BENCH_API_ROUNDS) || (quick ? 1 : 3);
    const getRuns: Run[] = [];
    const healthRuns: Run[] = [];
    // Alternated, so both see the machine's load of the same moment; CPU per request
    // (this process: client and server; Postgres) is steadier than req/s on a shared box.
    for (let r = 0; r < rounds; r++) {
      getRuns.push(await measured(pgb, total, conns, get));
      healthRuns.push(await measured(pgb, total, conns, health));
      for (const o of otherReads) o.runs.push(await measured(pgb, total, conns, o.call));
    }
    // Still live: a push is seen by the very next read.
    const pushed = await repo.commit('hot', { 'hot.txt': 'moved\n' });
    const after = (await client.json<{ change_request: Cr }>('GET', getPath, undefined, 200)).change_request;
    if (after.head_commit_sha !== pushed) throw new Error('GET of an open CR did not see the pushed head');
    const lsRuns = quick ? 40 : 200;
    const lsConc = 4;
    const lsRps = await throughput(lsRuns, lsConc, async () => {
      await runGit(['ls-remote', '--end-of-options', repo!.url, 'refs/heads/hot', 'refs/heads/hot-base'], { cwd: repo!.root });
    });
    const bestGet = Math.max(...getRuns.map((x) => x.rps));
    const bestHealth = Math.max(...healthRuns.map((x) => x.rps));
    const ratios = getRuns.map((g, i) => g.rps / healthRuns[i]!.rps);
    const us = (runs: Run[], k: 'nodeUs' | 'pgUs') => Math.round(median(runs.map((x) => x[k])));
    rows.push(
      {
        suite: 'api',
        name: `GET open CR, live refresh (${conns} connections)`,
        value: bestGet,
        unit: 'req/s',
        floor: bestHealth,
        ratio: bestGet / bestHealth,
        goal: '>= 1,000 req/s',
        met: bestGet >= 1000,
        notes:
          `${total} requests per run, best of ${rounds} (${getRuns.map((x) => Math.round(x.rps)).join('/')}); floor GET /healthz (${healthRuns.map((x) => Math.round(x.rps)).join('/')}); ` +
          `same-run ratios ${ratios.map((x) => x.toFixed(2)).join('/')} (median ${median(ratios).toFixed(2)}); ` +
          `CPU per request, median: GET node ${us(getRuns, 'nodeUs')} us + postgres ${us(getRuns, 'pgUs')} us, /healthz node ${us(healthRuns, 'nodeUs')} us + postgres ${us(healthRuns, 'pgUs')} us; ` +
          `a push was seen by the next GET; ${os.availableParallelism()} cores shared by client, server and Postgres`,
      },
      {
        suite: 'api',
        name: `git ls-remote of the same repo (floor, ${lsConc} at a time)`,
        value: lsRps,
        unit: 'calls/s',
        notes: `${lsRuns} calls; what each GET cost before tips were read from the ref files`,
      },
    );

    for (const o of otherReads) {
      const ratios = o.runs.map((g, i) => g.rps / healthRuns[i]!.rps);
      const best = Math.max(...o.runs.map((x) => x.rps));
      rows.push({
        suite: 'api',
        name: `${o.name} (${conns} connections)`,
        value: best,
        unit: 'req/s',
        floor: bestHealth,
        ratio: best / bestHealth,
        notes:
          `${total} requests per run, best of ${rounds} (${o.runs.map((x) => Math.round(x.rps)).join('/')}), in the rounds of the open-CR read; ` +
          `same-run ratios to /healthz ${ratios.map((x) => x.toFixed(2)).join('/')} (median ${median(ratios).toFixed(2)}); ` +
          `CPU per request, median: node ${us(o.runs, 'nodeUs')} us + postgres ${us(o.runs, 'pgUs')} us`,
      });
    }

    if (only === 'get') return rows; // iterating on the open-CR read alone

    // (c) create, 16 concurrent.
    const creates = quick ? 200 : 1_000;
    const createConns = 16;
    const creator = new Client(server.port, token, createConns);
    clients.push(creator);
    const create = async (i: number) => {
      const r = await creator.request('POST', crs, { title: `Create ${i}`, head_ref: createBranches[i % createBranches.length]!, base_ref: 'main' });
      if (r.status !== 201) throw new Error(`POST ${crs}: ${r.status} ${r.body.slice(0, 200)}`);
    };
    await throughput(32, createConns, create);
    const createRps = await throughput(creates, createConns, create);
    rows.push({
      suite: 'api',
      name: `create CR (${createConns} connections)`,
      value: createRps,
      unit: 'req/s',
      floor: bestHealth,
      ratio: createRps / bestHealth,
      notes: `${creates} POSTs, one project (numbers allocated under its counter row lock); tips read live; floor GET /healthz`,
    });
    return rows;
  } finally {
    for (const c of clients) c.close();
    await server?.stop().catch(() => {});
    await pgb.stop();
    await backend?.close().catch(() => {});
    for (const r of [repo, ...extraRepos]) await r?.cleanup().catch(() => {});
    if (dataDir) await rm(dataDir, { recursive: true, force: true }).catch(() => {});
  }
};
