/**
 * `npm run bench -- api`: the real server (`startServer`: API + merge worker, on an
 * embedded Postgres of its own) against a real bare repository on disk (`file://`), over
 * HTTP on loopback with keep-alive connections.
 *
 * - merge end to end: N sequential `POST .../merge` of distinct CRs (fast-forwards and
 *   merge commits alternating), p50 / p99. Goals: p50 <= 60 ms, p99 <= 200 ms. Floor:
 *   the raw plumbing of one merge (`merge-tree --write-tree` + `commit-tree` + `push`).
 * - GET of an open CR (live refresh: both branch tips re-read on every request), 32
 *   concurrent connections, a fixed number of requests. Goal: >= 1,000 req/s. Floors:
 *   `GET /healthz` at the same concurrency, and `git ls-remote` of the same repo.
 * - create: `POST .../change-requests`, 16 concurrent connections.
 */
import http from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../../infra/config.js';
import { silentLogger } from '../../../infra/logger.js';
import { bootstrapUser } from '../../../infra/accounts.js';
import { runGit } from '../../../infra/git/run.js';
import { identityEnv } from '../../../infra/git/engine-ort.js';
import { SYSTEM_IDENTITY } from '../../../infra/git/port.js';
import { startServer, type RunningServer } from '../../server.js';
import { median, percentile, type BenchRow, type BenchSuite } from '../types.js';
import { startBenchPostgres } from '../support/pg.js';
import { benchRepo, type BenchRepo } from '../support/git-fixture.js';

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

const ms = (t: bigint) => Number(process.hrtime.bigint() - t) / 1e6;

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
  let dataDir: string | undefined;
  let server: RunningServer | undefined;
  const clients: Client[] = [];
  try {
    const { db, url } = await pgb.database('svc', { max: 20 });
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'svc-bench-api-data-'));
    const config = loadConfig({ PORT: '0', HOST: '127.0.0.1', SVC_DATA_DIR: dataDir, LOG_LEVEL: 'silent', DATABASE_URL: url, SVC_ALLOW_FILE_REPOS: '1' });
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
    // Merge-commit branches fork from the first commit; fast-forward ones are made from
    // the current main right before their merge.
    const mcBranches = Array.from({ length: Math.ceil(merges / 2) }, (_, i) => `mc-${i}`);
    const floorBranches = Array.from({ length: floorRuns + 2 }, (_, i) => `floor-${i}`);
    const createBranches = Array.from({ length: 16 }, (_, i) => `create-${i}`);
    await repo.branches([...mcBranches, ...floorBranches, ...createBranches, 'hot', 'hot-base'], 'main');

    const { project } = await client.json<{ project: { project_id: string } }>('POST', '/v1/projects', { name: 'bench', repo_url: repo.url }, 201);
    const crs = `/v1/projects/${project.project_id}/change-requests`;
    const open = async (head: string, base = 'main') =>
      (await client.json<{ change_request: Cr }>('POST', crs, { title: `Bench ${head}`, head_ref: head, base_ref: base }, 201)).change_request;

    // (a) merges, sequential.
    const mergeMs: number[] = [];
    let ff = 0;
    let mergeCommits = 0;
    for (let i = 0; i < merges; i++) {
      let head: string;
      if (i % 2 === 0) {
        head = `ff-${i}`;
        await repo.commit(head, { [`ff/${i}.txt`]: `fast-forward ${i}\n` }, 'main');
      } else {
        head = mcBranches[(i - 1) / 2]!;
      }
      const cr = await open(head);
      const t = process.hrtime.bigint();
      const merged = (await client.json<{ change_request: Cr }>('POST', `${crs}/${cr.number}/merge`, {}, 200)).change_request;
      mergeMs.push(ms(t));
      if (merged.status !== 'merged' || !merged.merge_commit_sha) throw new Error(`merge of ${head} did not merge`);
      const parents = (await repo.bareGit(['rev-list', '--parents', '-n', '1', merged.merge_commit_sha])).split(' ').length - 1;
      if (parents === 2) mergeCommits++;
      else ff++;
    }
    const floorMs = await rawMergeFloor(repo, floorBranches, floorRuns);
    const p50 = percentile(mergeMs.slice(2), 50); // first two: mirror creation and first fetch
    const p99 = percentile(mergeMs.slice(2), 99);
    const floor = median(floorMs);
    rows.push(
      {
        suite: 'api',
        name: 'merge end to end p50 (HTTP, small repo)',
        value: p50,
        unit: 'ms',
        floor,
        ratio: p50 / floor,
        goal: '<= 60 ms',
        met: p50 <= 60,
        notes: `${merges - 2} sequential merges timed (${ff} fast-forward, ${mergeCommits} merge commits in all ${merges}); first 2 excluded (mirror creation); floor: merge-tree --write-tree + commit-tree + push, median of ${floorRuns}`,
      },
      {
        suite: 'api',
        name: 'merge end to end p99 (HTTP, small repo)',
        value: p99,
        unit: 'ms',
        floor,
        ratio: p99 / floor,
        goal: '<= 200 ms',
        met: p99 <= 200,
        notes: `max ${Math.max(...mergeMs.slice(2)).toFixed(1)} ms; first two ${mergeMs.slice(0, 2).map((m) => m.toFixed(0)).join('/')} ms`,
      },
    );

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
    await throughput(200, conns, get); // warm-up, opens the connections
    await throughput(200, conns, health);
    const rounds = quick ? 1 : 3;
    const getRps: number[] = [];
    const healthRps: number[] = [];
    for (let r = 0; r < rounds; r++) {
      getRps.push(await throughput(total, conns, get));
      healthRps.push(await throughput(total, conns, health));
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
    const bestGet = Math.max(...getRps);
    const bestHealth = Math.max(...healthRps);
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
        notes: `${total} requests per run, best of ${rounds} (${getRps.map(Math.round).join('/')}); floor GET /healthz (${healthRps.map(Math.round).join('/')}); a push was seen by the next GET; ${os.availableParallelism()} cores shared by client, server and Postgres`,
      },
      {
        suite: 'api',
        name: `git ls-remote of the same repo (floor, ${lsConc} at a time)`,
        value: lsRps,
        unit: 'calls/s',
        notes: `${lsRuns} calls; what each GET cost before tips were read from the ref files`,
      },
    );

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
    await repo?.cleanup().catch(() => {});
    if (dataDir) await rm(dataDir, { recursive: true, force: true }).catch(() => {});
  }
};

/**
 * The floor of one merge: what the service's git work comes down to, as raw plumbing in
 * a bare clone pushing to another bare copy of the remote.
 */
async function rawMergeFloor(repo: BenchRepo, branches: string[], runs: number): Promise<number[]> {
  const mirror = path.join(repo.root, 'floor-mirror.git');
  const target = path.join(repo.root, 'floor-target.git');
  await runGit(['clone', '--bare', '--quiet', '--', repo.bare, mirror]);
  await runGit(['clone', '--bare', '--quiet', '--', repo.bare, target]);
  const targetUrl = `file://${target}`;
  let base = (await runGit(['rev-parse', 'refs/heads/main'], { cwd: target })).stdout.toString().trim();
  const out: number[] = [];
  for (let i = 0; i < runs + 2; i++) {
    const head = (await runGit(['rev-parse', `refs/heads/${branches[i]!}`], { cwd: mirror })).stdout.toString().trim();
    const t = process.hrtime.bigint();
    const tree = (await runGit(['merge-tree', '--write-tree', '-z', base, head], { cwd: mirror })).stdout.toString('utf8').split('\0')[0]!;
    const commit = (
      await runGit(['commit-tree', tree, '-p', base, '-p', head, '-m', `floor ${i}`], {
        cwd: mirror,
        env: identityEnv({ base_sha: base, head_sha: head, message: '', author: SYSTEM_IDENTITY }),
      })
    ).stdout
      .toString()
      .trim();
    await runGit(['push', '--quiet', '--porcelain', '--end-of-options', targetUrl, `${commit}:refs/heads/main`], { cwd: mirror });
    if (i >= 2) out.push(ms(t));
    base = commit;
  }
  return out;
}
