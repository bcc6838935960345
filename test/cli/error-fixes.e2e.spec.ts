/**
 * Every error a new user meets first says what to do, not only what went wrong: one row per
 * message, each run as a real process (svc, svc-server, the image scripts) against a real
 * server, a closed port, or a Docker that cannot reach a registry, asserting that the one
 * line names the fix.
 */
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { chmod, mkdir, writeFile } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { projectRoot } from '../../lib/paths.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { sandbox, spawnSvc, type Sandbox } from './helpers.js';

function run(cmd: string, args: string[], env: Record<string, string>): Promise<{ code: number; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd: projectRoot, env, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? -1, stderr }));
  });
}

async function closedPort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as net.AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

interface Row {
  what: string;
  run(): Promise<{ code: number; stderr: string }>;
  code: number;
  /** What the line must say: the cause, then the fix. */
  says: RegExp[];
}

describe('every first error names its fix (real processes)', function () {
  this.timeout(120_000);
  let srv: TestServer;
  let sb: Sandbox;
  let fakeDocker: string;
  let down: number;
  before(async () => {
    srv = await startTestServer();
    sb = await sandbox();
    down = await closedPort();
    // A Docker engine that runs but reaches no registry, and has no local base image.
    fakeDocker = path.join(sb.dir, 'bin');
    await mkdir(fakeDocker);
    await writeFile(
      path.join(fakeDocker, 'docker'),
      '#!/bin/sh\ncase "$1" in\n  info) exit 0 ;;\n  pull) echo \'Error response from daemon: Get "https://registry-1.docker.io/v2/": dial tcp: lookup registry-1.docker.io: no such host\' >&2; exit 1 ;;\n  *) exit 1 ;;\nesac\n',
    );
    await chmod(path.join(fakeDocker, 'docker'), 0o755);
    await mkdir(path.dirname(sb.configPath), { recursive: true });
    await writeFile(sb.configPath, JSON.stringify({ active_host: 'mine', hosts: { mine: { url: srv.url, token: 'svc_pat_revoked0000000000000000' } } }));
  });
  after(async () => {
    await srv?.stop();
    await sb?.cleanup();
  });

  const svcServer = path.join(projectRoot, 'dist', 'ops', 'svc-server.js');
  const baseEnv = () => ({ PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: sb.home });
  const rows = (): Row[] => [
    {
      what: 'a refused SVC_CLI_TOKEN names the variable (it overrides any login)',
      run: () => spawnSvc(['whoami'], { env: { ...baseEnv(), SVC_API_URL: srv.url, SVC_CLI_TOKEN: 'svc_pat_wrong000000000000000000' } }),
      code: 1,
      says: [/HTTP 401/, /SVC_CLI_TOKEN/, /unset it|valid token/],
    },
    {
      what: 'a refused stored token names the config file and svc login',
      run: () => spawnSvc(['whoami'], { env: { ...baseEnv(), SVC_CONFIG_FILE: sb.configPath } }),
      code: 1,
      says: [/HTTP 401/, new RegExp(sb.configPath.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')), /run 'svc login'/],
    },
    {
      what: 'a stopped server: is svc-server running there, and how to start it',
      run: () => spawnSvc(['whoami'], { env: { ...baseEnv(), SVC_API_URL: `http://127.0.0.1:${down}`, SVC_CLI_TOKEN: 'svc_pat_x' } }),
      code: 1,
      says: [/ECONNREFUSED/, new RegExp(`is svc-server running at http://127\\.0\\.0\\.1:${down}\\?`), /svc-server start/],
    },
    {
      what: 'svc-server with a typo suggests the command',
      run: () => run(process.execPath, [svcServer, 'strat'], baseEnv()),
      code: 2,
      says: [/unknown command "strat" for "svc-server"/, /did you mean "start"\?/],
    },
    {
      what: 'svc with a typo suggests the command',
      run: () => spawnSvc(['sessins'], { env: baseEnv() }),
      code: 2,
      says: [/unknown command "sessins"/, /did you mean "sessions"\?/],
    },
    {
      what: 'ops/sandbox-image.sh without the local base image names the script that builds it',
      run: () => run('bash', ['ops/sandbox-image.sh'], { ...baseEnv(), PATH: `${fakeDocker}:${baseEnv().PATH}` }),
      code: 1,
      says: [/base image node:20-slim is not on this machine/, /no such host/, /ops\/sandbox-base-image\.sh/],
    },
    {
      what: 'ops/server-image.sh without the local base image names the script that builds it',
      run: () => run('bash', ['ops/server-image.sh'], { ...baseEnv(), PATH: `${fakeDocker}:${baseEnv().PATH}` }),
      code: 1,
      says: [/base image node:20-slim is not on this machine/, /ops\/sandbox-base-image\.sh/],
    },
  ];

  it('walks the table: each exits with its code and its message names the cause and the fix', async () => {
    for (const row of rows()) {
      const r = await row.run();
      expect(r.code, `${row.what}: ${r.stderr}`).to.equal(row.code);
      for (const re of row.says) expect(r.stderr, row.what).to.match(re);
    }
  });
});
