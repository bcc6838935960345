import { expect } from 'chai';
import { execFile, execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { parse } from 'yaml';
import { projectRoot } from '../../../lib/paths.js';
import { freePort } from '../../support/server.js';
import { skipUnlessCi } from '../../support/skip.js';
import { eventually } from '../../support/wait.js';

const run = promisify(execFile);
const dockerUp = (() => {
  try {
    execFileSync('docker', ['info'], { stdio: 'ignore', timeout: 10_000 });
    return true;
  } catch {
    return false;
  }
})();

/** `docker compose` (the plugin) or `docker-compose` (Debian's), whichever this machine has. */
function composeCommand(): string[] | null {
  for (const cmd of [['docker', 'compose'], ['docker-compose']]) {
    try {
      execFileSync(cmd[0]!, [...cmd.slice(1), 'version'], { stdio: 'ignore', timeout: 10_000 });
      return cmd;
    } catch {
      /* next */
    }
  }
  return null;
}

/** test/support/wait.ts's `eventually` for a probe that answers a value (undefined: not yet) and may throw while starting. */
const until = <T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined>): Promise<T> =>
  eventually(async () => {
    const v = await probe();
    return v === undefined ? undefined : { v };
  }, what, { timeoutMs, ignoreErrors: true, maxIntervalMs: 250 }).then((x) => x.v);

/**
 * The server image (ops/server.Dockerfile) built offline by ops/server-image.sh on the
 * local base, run with host networking (every connection stays on 127.0.0.1).
 */
describe('server image (docker, host network)', function () {
  this.timeout(600_000);
  const image = process.env.SVC_SERVER_IMAGE ?? 'svc-server:local';
  const name = `svc-image-test-${randomBytes(4).toString('hex')}`;

  before(async function () {
    if (!dockerUp) return skipUnlessCi(this, 'no Docker engine');
    const present = await run('docker', ['image', 'inspect', image]).then(
      () => true,
      () => false,
    );
    // A locally built image (its base images too): CI builds it before the suite; elsewhere a missing one is a skip that says how to build it.
    if (!present && !process.env.CI) return skipUnlessCi(this, `image ${image} is not built here (ops/server-image.sh --tag ${image} builds it; CI builds it before the suite)`);
    if (!present) await run(path.join(projectRoot, 'ops', 'server-image.sh'), ['--tag', image], { cwd: projectRoot });
  });
  after(async () => {
    if (dockerUp) await run('docker', ['rm', '-f', '-v', name]).catch(() => {});
  });

  it('runs svc-server start (embedded PostgreSQL) as uid 1000, answers /readyz, becomes healthy, and bootstraps a token that the API accepts', async () => {
    const port = await freePort();
    await run('docker', ['run', '-d', '--name', name, '--network', 'host', '-e', `PORT=${port}`, '-e', 'HOST=127.0.0.1', '-e', 'LOG_LEVEL=warn', image]);
    const url = `http://127.0.0.1:${port}`;
    const ready = await until('/readyz', 120_000, async () => {
      const r = await fetch(`${url}/readyz`);
      return r.status === 200 ? ((await r.json()) as { checks: Record<string, string> }) : undefined;
    });
    expect(ready.checks).to.deep.equal({ database: 'ok', queue: 'ok' });
    expect((await run('docker', ['exec', name, 'id', '-u'])).stdout.trim()).to.equal('1000');
    const token = (await run('docker', ['exec', name, 'svc-server', 'admin', 'bootstrap', '--email', 'image@example.test'])).stdout.trim();
    expect(token).to.match(/^svc_pat_/);
    const me = await fetch(`${url}/v1/accounts/me`, { headers: { authorization: `Bearer ${token}` } });
    expect(me.status).to.equal(200);
    const health = await until('docker health status healthy', 120_000, async () => {
      const s = (await run('docker', ['inspect', '-f', '{{.State.Health.Status}}', name])).stdout.trim();
      return s === 'healthy' ? s : undefined;
    });
    expect(health).to.equal('healthy');
    const cfg = JSON.parse((await run('docker', ['image', 'inspect', '-f', '{{json .Config}}', image])).stdout) as { User: string; Cmd: string[]; Entrypoint: string[] };
    expect(cfg.User).to.equal('1000:1000');
    expect(cfg.Cmd).to.deep.equal(['start']);
  });
});

describe('ops/compose.yaml', function () {
  this.timeout(60_000);
  const composeFile = path.join(projectRoot, 'ops', 'compose.yaml');
  let dir: string;
  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'svc-compose-'));
  });
  after(() => rm(dir, { recursive: true, force: true }));

  it('has postgres, a one-shot migrate, api and worker on shared volumes, all on the host network (parsed with yaml)', async () => {
    const doc = parse((await import('node:fs')).readFileSync(composeFile, 'utf8'), { merge: true }) as {
      services: Record<string, { command?: string[]; depends_on?: Record<string, { condition: string }>; volumes?: string[]; restart?: string; ports?: string[]; network_mode?: string; privileged?: boolean }>;
      volumes: Record<string, unknown>;
    };
    expect(Object.keys(doc.services).sort()).to.deep.equal(['api', 'migrate', 'postgres', 'worker']);
    expect(doc.services.migrate!.command).to.deep.equal(['migrate']);
    expect(doc.services.migrate!.restart).to.equal('no');
    expect(doc.services.api!.command).to.deep.equal(['api']);
    expect(doc.services.worker!.command).to.deep.equal(['worker']);
    for (const s of ['api', 'worker']) {
      expect(doc.services[s]!.depends_on).to.deep.equal({ migrate: { condition: 'service_completed_successfully' } });
      expect(doc.services[s]!.volumes).to.deep.equal(['data:/var/lib/svc']);
    }
    expect(Object.keys(doc.volumes).sort()).to.deep.equal(['data', 'pgdata']);
    // Host networking only, nothing published through a bridge; no service is privileged
    // (the sandbox hosts get a seccomp profile of their own: compose-file.unit checks it).
    for (const [name, s] of Object.entries(doc.services)) {
      expect(s.network_mode, name).to.equal('host');
      expect(s.ports, name).to.equal(undefined);
      expect(!!s.privileged, name).to.equal(false);
    }
  });

  it('validates with `docker compose config` (or docker-compose), and refuses an env file without POSTGRES_PASSWORD', async function () {
    const compose = composeCommand();
    if (!compose) return skipUnlessCi(this, 'neither docker compose nor docker-compose is installed');
    const envFile = path.join(dir, 'svc.env');
    await writeFile(envFile, `POSTGRES_PASSWORD=pw-${randomBytes(4).toString('hex')}\nSVC_SECRET_KEY=${randomBytes(32).toString('base64')}\n`, { mode: 0o600 });
    const env = { ...process.env, SVC_ENV_FILE: envFile, SVC_PORT: '18080' };
    const ok = await run(compose[0]!, [...compose.slice(1), '-p', 'svc-test', '-f', composeFile, '--env-file', envFile, 'config'], { env });
    const cfg = parse(ok.stdout) as { services: Record<string, { environment?: Record<string, string>; command?: string[] }> };
    expect(Object.keys(cfg.services).sort()).to.deep.equal(['api', 'migrate', 'postgres', 'worker']);
    expect(cfg.services.api!.environment!.DATABASE_URL).to.match(/^postgres:\/\/svc:pw-[0-9a-f]+@127\.0\.0\.1:5432\/svc$/);
    expect(cfg.services.api!.environment).to.include({ HOST: '127.0.0.1', PORT: '18080' });
    expect(cfg.services.worker!.environment).to.include({ HOST: '127.0.0.1', PORT: '8081' });
    expect(cfg.services.postgres!.command).to.include('listen_addresses=127.0.0.1');

    await writeFile(envFile, 'SVC_SECRET_KEY=x\n');
    const bad = await run(compose[0]!, [...compose.slice(1), '-p', 'svc-test', '-f', composeFile, '--env-file', envFile, 'config'], { env }).then(
      () => null,
      (err: { stderr: string }) => err.stderr,
    );
    expect(bad).to.contain('POSTGRES_PASSWORD must be set');
  });
});
