/**
 * `npm run bench -- cli`: how long `svc` takes to start and answer, as separate processes,
 * against `node -e 0` (the floor: the runtime's own start) in the same run.
 *
 * - `svc version` cold: the fast path that loads neither yargs nor a command module.
 *   Goal: <= 80 ms median.
 * - `svc hosts ls`: yargs + one command module + the config file, no network.
 * - `svc cr ls` against a local server: yargs, one command, one HTTP round trip. The
 *   server is a stub on loopback answering in microseconds, so the row is the CLI's own
 *   cost. Goal: <= 150 ms median.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { projectRoot } from '../../lib/paths.js';
import { median, timeRuns, type BenchRow, type BenchSuite } from '../types.js';

const bin = path.join(projectRoot, 'dist', 'cli', 'main.js');

function runProcess(args: string[], env: Record<string, string>): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { env, stdio: ['ignore', 'ignore', 'ignore'] });
    child.once('error', reject);
    child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`${args.join(' ')} exited ${code}`))));
  });
}

export const run: BenchSuite = async ({ quick }) => {
  const n = quick ? 7 : 31;
  const project = '0b9a6c52-8a53-4a4e-9f6b-1a4f1f6f0a01';
  const crs = Array.from({ length: 20 }, (_, i) => ({
    cr_id: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
    project_id: project,
    number: 20 - i,
    title: `Change ${20 - i}`,
    head_ref: `session-${i}`,
    base_ref: 'main',
    status: 'open',
    created_at: new Date(Date.now() - i * 60_000).toISOString(),
  }));
  const body = JSON.stringify({ change_requests: crs });
  const server = http.createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(body);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const port = (server.address() as { port: number }).port;
  const home = await mkdtemp(path.join(os.tmpdir(), 'svc-bench-cli-'));
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '',
    HOME: home,
    SVC_CONFIG_FILE: path.join(home, 'config.json'),
    SVC_API_URL: `http://127.0.0.1:${port}/v1`,
    SVC_CLI_TOKEN: 'svc_pat_bench',
    SVC_PROJECT_ID: project,
  };
  try {
    const floor = median(await timeRuns(n, () => runProcess(['-e', '0'], env)));
    const row = (name: string, value: number, goalMs?: number, notes?: string): BenchRow => ({
      suite: 'cli',
      name,
      value,
      unit: 'ms',
      floor,
      ratio: value / floor,
      ...(goalMs !== undefined ? { goal: `<= ${goalMs} ms median`, met: value <= goalMs } : {}),
      ...(notes ? { notes } : {}),
    });
    const version = median(await timeRuns(n, () => runProcess([bin, 'version'], env)));
    const hostsLs = median(await timeRuns(n, () => runProcess([bin, 'hosts', 'ls'], env)));
    const crLs = median(await timeRuns(n, () => runProcess([bin, 'cr', 'ls'], env)));
    return [
      row('node -e 0 (floor)', floor),
      row('svc version (cold)', version, 80),
      row('svc hosts ls (no network)', hostsLs),
      row('svc cr ls (local stub server)', crLs, 150, '20 CRs, piped output'),
    ];
  } finally {
    server.close();
    await rm(home, { recursive: true, force: true });
  }
};
