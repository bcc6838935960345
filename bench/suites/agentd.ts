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
 * - the reference: the same load, same generator, through nginx (Debian's
 *   package, one worker, keep-alive to the upstream) as a reverse proxy on loopback, in
 *   the same run. Goals: the daemon's `/proxy/:port/*` >= 0.8x nginx's req/s and <= 1.2x
 *   nginx's added p50 latency.
 *
 * Where the daemon's CPU goes per proxied request (perf, Nov 2026; docs/speed.md has the
 * table): ~47% kernel (the same one read and one write per side nginx makes), ~25% Node's
 * event loop and net.Socket glue per read and write, ~27% the proxy's own JavaScript
 * (no function above 2-3%).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '../../lib/net.js';
import { startDaemon } from '../../test/agentd/support/harness.js';
import { percentile, type BenchRow, type BenchSuite } from '../types.js';

/** `port`: a TCP port of 127.0.0.1, or a Unix socket path (the daemon's SVC_DAEMON_SOCKET, how the server reaches an isolated sandbox). */
function getOnce(agent: http.Agent, port: number | string, path: string, headers: Record<string, string>): Promise<void> {
  return new Promise((resolve, reject) => {
    const to = typeof port === 'string' ? { socketPath: port } : { host: '127.0.0.1', port };
    const req = http.get({ ...to, path, headers, agent }, (res) => {
      if (res.statusCode !== 200) reject(new Error(`status ${res.statusCode}`));
      res.resume();
      res.on('end', () => resolve());
    });
    req.on('error', reject);
  });
}

/**
 * Latencies of several targets measured in turn, one request to each per round, so every
 * target sees the same moment of a busy machine (sequential phases would not).
 */
async function interleavedLatencies(targets: { port: number | string; headers: Record<string, string>; path: string }[], n: number): Promise<number[][]> {
  const agents = targets.map(() => new http.Agent({ keepAlive: true, maxSockets: 1 }));
  const out = targets.map(() => [] as number[]);
  try {
    for (let i = 0; i < n + 50; i++) {
      for (let k = 0; k < targets.length; k++) {
        const t = targets[k]!;
        const start = process.hrtime.bigint();
        await getOnce(agents[k]!, t.port, t.path, t.headers);
        if (i >= 50) out[k]!.push(Number(process.hrtime.bigint() - start) / 1e6);
      }
    }
  } finally {
    for (const a of agents) a.destroy();
  }
  return out;
}

async function throughput(port: number | string, headers: Record<string, string>, total: number, connections: number, urlPath = '/fake/hello'): Promise<number> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: connections });
  let next = 0;
  const worker = async () => {
    while (next < total) {
      next++;
      await getOnce(agent, port, urlPath, headers);
    }
  };
  try {
    // Open the connections first so connection setup is not timed.
    await Promise.all(Array.from({ length: connections }, () => getOnce(agent, port, urlPath, headers)));
    const t = process.hrtime.bigint();
    await Promise.all(Array.from({ length: connections }, worker));
    return total / (Number(process.hrtime.bigint() - t) / 1e9);
  } finally {
    agent.destroy();
  }
}

/** CPU seconds (user + system) a process has used so far; NaN where /proc is not there. */
function cpuSeconds(pid: number | undefined): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100; // clock ticks, USER_HZ = 100
  } catch {
    return NaN;
  }
}

/** nginx as a plain reverse proxy to 127.0.0.1:`upstreamPort`, on a free loopback port. */
async function startNginx(upstreamPort: number): Promise<{ port: number; worker: number; stop(): Promise<void> } | { error: string }> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'svc-bench-nginx-'));
  const port = await freePort();
  const conf = `daemon off;
master_process on;
worker_processes 1;
error_log ${dir}/error.log warn;
pid ${dir}/nginx.pid;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path ${dir}/body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  upstream preview { server 127.0.0.1:${upstreamPort}; keepalive 64; }
  server {
    listen 127.0.0.1:${port};
    location / {
      proxy_pass http://preview;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;
    }
  }
}
`;
  await writeFile(path.join(dir, 'nginx.conf'), conf);
  let proc: ChildProcess;
  try {
    proc = spawn('nginx', ['-p', dir, '-c', path.join(dir, 'nginx.conf')], { stdio: ['ignore', 'ignore', 'pipe'] });
  } catch (err) {
    await rm(dir, { recursive: true, force: true });
    return { error: (err as Error).message };
  }
  let stderr = '';
  proc.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
  const exited = new Promise<void>((r) => proc.once('exit', () => r()));
  const spawnFailed = new Promise<string>((r) => proc.once('error', (e) => r(e.message)));
  // Ready when it answers (a 502 would mean the upstream is down, still "nginx is up").
  for (let i = 0; ; i++) {
    const up = await new Promise<boolean>((r) => {
      http.get({ host: '127.0.0.1', port, path: '/fake/hello' }, (res) => (res.resume(), r(true))).on('error', () => r(false));
    });
    if (up) break;
    if (proc.exitCode !== null || i > 200) {
      await rm(dir, { recursive: true, force: true });
      return { error: `nginx did not start: ${stderr.trim() || (await Promise.race([spawnFailed, Promise.resolve('')]))}` };
    }
    await new Promise((r) => setTimeout(r, 25));
  }
  // The one worker does the proxying (the master only supervises).
  const worker = Number(spawnSync('pgrep', ['-P', String(proc.pid)], { encoding: 'utf8' }).stdout.trim().split('\n')[0]);
  return {
    port,
    worker,
    async stop() {
      proc.kill('SIGTERM');
      await exited;
      await rm(dir, { recursive: true, force: true });
    },
  };
}

export const run: BenchSuite = async ({ quick }) => {
  const sockDir = await mkdtemp(path.join(os.tmpdir(), 'svc-bench-sock-'));
  const socket = path.join(sockDir, 'daemon.sock');
  const d = await startDaemon({ env: { LOG_LEVEL: 'warn', SVC_DAEMON_SOCKET: socket } });
  let nginx: Awaited<ReturnType<typeof startNginx>> | undefined;
  try {
    await d.waitForAgent('running');
    const direct = {};
    const proxied = { 'x-svc-user-context': d.sign({ exp: Math.floor(Date.now() / 1000) + 3600 }) };
    const n = quick ? 500 : 3000;
    const total = quick ? 5_000 : 30_000;
    const connections = 32;

    // The daemon's preview route, /proxy/:port/*, to the same upstream.
    const viaProxy = `/proxy/${d.agentPort}/fake/hello`;
    nginx = await startNginx(d.agentPort);
    const ng = 'port' in nginx ? nginx : null;

    const [directLat = [], proxyLat = [], socketLat = [], nginxLat = []] = await interleavedLatencies(
      [
        { port: d.agentPort, headers: direct, path: '/fake/hello' },
        { port: d.port, headers: proxied, path: viaProxy },
        { port: socket, headers: proxied, path: viaProxy },
        ...(ng ? [{ port: ng.port, headers: direct, path: '/fake/hello' }] : []),
      ],
      n,
    );
    const socketRps: number[] = [];
    // Interleave and keep each side's best run, so drift on a busy machine hurts all alike.
    const directRps: number[] = [];
    const proxyRps: number[] = [];
    const nginxRps: number[] = [];
    // CPU each proxy process spent over its throughput runs, per request: on a shared
    // machine this is what the req/s ratio is made of.
    const cpu = { proxy: 0, nginx: 0 };
    for (let round = 0; round < (quick ? 1 : 3); round++) {
      directRps.push(await throughput(d.agentPort, direct, total, connections));
      let c = cpuSeconds(d.child.pid);
      proxyRps.push(await throughput(d.port, proxied, total, connections, viaProxy));
      cpu.proxy += cpuSeconds(d.child.pid) - c;
      socketRps.push(await throughput(socket, proxied, total, connections, viaProxy));
      if (ng) {
        c = cpuSeconds(ng.worker);
        nginxRps.push(await throughput(ng.port, direct, total, connections));
        cpu.nginx += cpuSeconds(ng.worker) - c;
      }
    }
    const cpuPerRequest = (s: number) => `${((s / (total * directRps.length)) * 1e6).toFixed(0)} µs`;
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
        notes: `p50 direct ${p50Direct.toFixed(3)} ms, proxied ${p50Proxy.toFixed(3)} ms; p99 direct ${percentile(directLat, 99).toFixed(3)} ms, proxied ${percentile(proxyLat, 99).toFixed(3)} ms; n=${n}, requests to direct / proxy / nginx interleaved`,
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
    const p50Socket = percentile(socketLat, 50);
    const bestSocket = Math.max(...socketRps);
    rows.push(
      {
        suite: 'agentd',
        name: 'proxy added latency p50 through the daemon socket (how the server reaches bwrap/docker sandboxes)',
        value: p50Socket - p50Direct,
        unit: 'ms',
        floor: p50Direct,
        ratio: p50Socket / p50Direct,
        goal: '<= 1 ms added',
        met: p50Socket - p50Direct <= 1,
        notes: `p50 via socket ${p50Socket.toFixed(3)} ms (TCP ${p50Proxy.toFixed(3)} ms), p99 ${percentile(socketLat, 99).toFixed(3)} ms`,
      },
      {
        suite: 'agentd',
        name: `proxy throughput through the daemon socket (${connections} connections)`,
        value: bestSocket,
        unit: 'req/s',
        floor: bestDirect,
        ratio: bestSocket / bestDirect,
        goal: '>= 70% of direct',
        met: bestSocket / bestDirect >= 0.7,
        notes: `socket runs ${socketRps.map(Math.round).join('/')} (TCP proxied ${proxyRps.map(Math.round).join('/')})`,
      },
    );
    if (ng) {
      const p50Nginx = percentile(nginxLat, 50);
      const nginxAdded = p50Nginx - p50Direct;
      const bestNginx = Math.max(...nginxRps);
      rows.push(
        {
          suite: 'agentd',
          name: 'proxy req/s vs nginx (same load, same run)',
          value: bestProxy,
          unit: 'req/s',
          floor: bestNginx,
          ratio: bestProxy / bestNginx,
          goal: '>= 0.8x nginx',
          met: bestProxy >= 0.8 * bestNginx,
          notes: `nginx 1 worker, upstream keepalive, proxy_buffering off; nginx runs ${nginxRps.map(Math.round).join('/')}; direct ${Math.round(bestDirect)} req/s (nginx ${(bestNginx / bestDirect).toFixed(2)}x of direct); CPU per request (user+sys): daemon ${cpuPerRequest(cpu.proxy)}, nginx worker ${cpuPerRequest(cpu.nginx)}; daemon profile: ~47% kernel (same syscalls as nginx), ~25% Node event loop + socket glue, ~27% proxy JS (docs/speed.md)`,
        },
        {
          suite: 'agentd',
          name: 'proxy added latency vs nginx added latency (p50)',
          value: added,
          unit: 'ms',
          floor: nginxAdded,
          ratio: added / nginxAdded,
          goal: '<= 1.2x nginx',
          met: added <= 1.2 * nginxAdded,
          notes: `p50 nginx ${p50Nginx.toFixed(3)} ms (added ${nginxAdded.toFixed(3)} ms), p99 ${percentile(nginxLat, 99).toFixed(3)} ms`,
        },
      );
    } else {
      rows.push({ suite: 'agentd', name: 'proxy vs nginx', value: NaN, unit: 'req/s', notes: `not run: ${(nginx as { error: string }).error}` });
    }
    return rows;
  } finally {
    if (nginx && 'port' in nginx) await nginx.stop();
    await d.stop();
    await rm(sockDir, { recursive: true, force: true });
  }
};
