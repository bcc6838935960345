/**
 * `npm run bench -- agentd`: what the daemon's proxy costs. One `svc-agent` process runs
 * the scripted runtime (test/agentd/support/fake-runtime.ts); the same runtime is hit
 * directly (the floor) and through the daemon with a signed X-Svc-User-Context, in the
 * same run, on loopback.
 *
 * - latency: sequential keep-alive GETs of a 5-byte body; p50 through the proxy minus
 *   p50 direct. Goal: <= 1 ms added.
 * - throughput: 32 concurrent keep-alive connections over a fixed number of requests;
 *   proxied req/s as a share of direct req/s. Goal: >= 70%.
 */
import http from 'node:http';
import os from 'node:os';
import { startDaemon } from '../../../test/agentd/support/harness.js';
import { percentile, type BenchRow, type BenchSuite } from '../types.js';

function getOnce(agent: http.Agent, port: number, path: string, headers: Record<string, string>): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path, headers, agent }, (res) => {
      if (res.statusCode !== 200) reject(new Error(`status ${res.statusCode}`));
      res.resume();
      res.on('end', () => resolve());
    });
    req.on('error', reject);
  });
}

async function latencies(port: number, headers: Record<string, string>, n: number): Promise<number[]> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const out: number[] = [];
  try {
    for (let i = 0; i < n + 50; i++) {
      const t = process.hrtime.bigint();
      await getOnce(agent, port, '/fake/hello', headers);
      if (i >= 50) out.push(Number(process.hrtime.bigint() - t) / 1e6);
    }
  } finally {
    agent.destroy();
  }
  return out;
}

async function throughput(port: number, headers: Record<string, string>, total: number, connections: number): Promise<number> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: connections });
  let next = 0;
  const worker = async () => {
    while (next < total) {
      next++;
      await getOnce(agent, port, '/fake/hello', headers);
    }
  };
  try {
    // Open the connections first so connection setup is not timed.
    await Promise.all(Array.from({ length: connections }, () => getOnce(agent, port, '/fake/hello', headers)));
    const t = process.hrtime.bigint();
    await Promise.all(Array.from({ length: connections }, worker));
    return total / (Number(process.hrtime.bigint() - t) / 1e9);
  } finally {
    agent.destroy();
  }
}

export const run: BenchSuite = async ({ quick }) => {
  const d = await startDaemon({ env: { LOG_LEVEL: 'warn' } });
  try {
    await d.waitForAgent('running');
    const direct = {};
    const proxied = { 'x-svc-user-context': d.sign({ exp: Math.floor(Date.now() / 1000) + 3600 }) };
    const n = quick ? 500 : 3000;
    const total = quick ? 5_000 : 30_000;
    const connections = 32;

    const directLat = await latencies(d.agentPort, direct, n);
    const proxyLat = await latencies(d.port, proxied, n);
    // Interleave and keep each side's best run, so drift on a busy machine hurts both alike.
    const directRps: number[] = [];
    const proxyRps: number[] = [];
    for (let round = 0; round < (quick ? 1 : 3); round++) {
      directRps.push(await throughput(d.agentPort, direct, total, connections));
      proxyRps.push(await throughput(d.port, proxied, total, connections));
    }
    const p50Direct = percentile(directLat, 50);
    const p50Proxy = percentile(proxyLat, 50);
    const added = p50Proxy - p50Direct;
    const bestDirect = Math.max(...directRps);
    const bestProxy = Math.max(...proxyRps);
    const share = bestProxy / bestDirect;
    const rows: BenchRow[] = [
      {
        suite: 'agentd',
        name: 'proxy added latency p50 (GET, keep-alive)',
        value: added,
        unit: 'ms',
        floor: p50Direct,
        ratio: p50Proxy / p50Direct,
        goal: '<= 1 ms added',
        met: added <= 1,
        notes: `p50 direct ${p50Direct.toFixed(3)} ms, proxied ${p50Proxy.toFixed(3)} ms; p99 direct ${percentile(directLat, 99).toFixed(3)} ms, proxied ${percentile(proxyLat, 99).toFixed(3)} ms; n=${n}`,
      },
      {
        suite: 'agentd',
        name: `proxy throughput (${connections} connections)`,
        value: bestProxy,
        unit: 'req/s',
        floor: bestDirect,
        ratio: share,
        goal: '>= 70% of direct',
        met: share >= 0.7,
        notes: `${os.availableParallelism()} cores shared by load generator, daemon and runtime; ${total} requests per run, best of ${directRps.length}; direct runs ${directRps.map(Math.round).join('/')}, proxied ${proxyRps.map(Math.round).join('/')}`,
      },
    ];
    return rows;
  } finally {
    await d.stop();
  }
};
