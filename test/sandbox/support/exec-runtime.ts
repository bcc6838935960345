#!/usr/bin/env node
/**
 * A stand-in agent runtime for the sandbox provider tests: it lets a test run a command
 * INSIDE the sandbox, the way an agent's tool would, through the daemon's proxy.
 *
 *   node exec-runtime.js serve --port P --hostname H
 *
 * GET /global/health -> {healthy}; POST /exec {"argv": [...]} -> {code, stdout, stderr}
 * (runs in the runtime's cwd with its environment); GET /env -> the runtime's environment.
 */
import { spawnSync } from 'node:child_process';
import http from 'node:http';
import { listenArgs, sendJson } from './runtime-http.js';

const { port, hostname } = listenArgs();

const server = http.createServer((req, res) => {
  const send = (status: number, body: unknown) => sendJson(res, status, body);
  let body = '';
  req.setEncoding('utf8');
  req.on('data', (d: string) => (body += d));
  req.on('end', () => {
    const p = new URL(req.url ?? '/', 'http://x').pathname;
    if (p === '/global/health') return send(200, { healthy: true, version: 'exec' });
    if (p === '/env') return send(200, { env: process.env, pid: process.pid, uid: process.getuid?.() });
    if (p === '/exec' && req.method === 'POST') {
      const { argv } = JSON.parse(body || '{}') as { argv: string[] };
      const r = spawnSync(argv[0]!, argv.slice(1), { encoding: 'utf8', timeout: 20_000 });
      return send(200, { code: r.status, stdout: r.stdout, stderr: r.stderr, error: r.error?.message ?? null });
    }
    send(404, { error: 'not found' });
  });
});
server.listen(port, hostname, () => process.stdout.write(`exec runtime listening on ${hostname}:${port}\n`));
