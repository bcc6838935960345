import { expect } from 'chai';
import { execFile, execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { readConfig } from '../../../cli/config.js';
import { projectRoot } from '../../../lib/paths.js';
import { sandbox, spawnSvc, type Sandbox } from '../../cli/helpers.js';
import { authedUrl, gitOk, workDir, type WorkDir } from '../../support/git-client.js';
import { client } from '../../support/http.js';
import { freePort } from '../../support/server.js';
import { skipUnlessCi } from '../../support/skip.js';
import { until } from '../../support/wait.js';

const run = promisify(execFile);
const composeFile = path.join(projectRoot, 'ops', 'compose.yaml');

/** `docker compose` (the plugin) or `docker-compose` (Debian's), as `svc self-host` picks it. */
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

const dockerUp = (): boolean => {
  try {
    execFileSync('docker', ['info'], { stdio: 'ignore', timeout: 10_000 });
    return true;
  } catch {
    return false;
  }
};

/** Local address of every TCP socket listening on `port` in this (the host's) network namespace. */
function listeners(port: number): string[] {
  const out: string[] = [];
  for (const f of ['/proc/net/tcp', '/proc/net/tcp6']) {
    for (const line of readFileSync(f, 'utf8').split('\n').slice(1)) {
      const cols = line.trim().split(/\s+/);
      if (cols[3] !== '0A') continue;
      const [addr, p] = cols[1]!.split(':');
      if (parseInt(p!, 16) !== port) continue;
      // /proc/net/tcp holds an IPv4 address as one little-endian hex word.
      out.push(addr!.length === 8 ? [3, 2, 1, 0].map((i) => parseInt(addr!.slice(i * 2, i * 2 + 2), 16)).join('.') : addr!);
    }
  }
  return out;
}

/**
 * The compose stack (ops/compose.yaml) brought up for real by `svc self-host start`: the
 * PostgreSQL image built from Debian's package (ops/postgres-image.sh), the server image
 * (ops/server-image.sh), host networking, everything on 127.0.0.1. A CR is merged through
 * it over HTTP, then `svc self-host stop` / `start` keeps it. Torn down (volumes too) at
 * the end, also on failure.
 */
describe('compose stack (svc self-host, host network, Debian PostgreSQL, bwrap inside)', function () {
  this.timeout(900_000);
  const project = `svc-e2e-${randomBytes(3).toString('hex')}`;
  const serverImage = process.env.SVC_SERVER_IMAGE ?? 'svc-server:local';
  const postgresImage = process.env.SVC_POSTGRES_IMAGE ?? 'svc-postgres:local';
  let compose: string[] | null = null;
  let sb: Sandbox | undefined;
  let ports: { api: number; worker: number; pg: number };
  let work: WorkDir | undefined;
  const envFile = () => path.join(sb!.home, '.svc', 'selfhost', 'svc.env');
  const svc = (args: string[]) => spawnSvc(args, { env: { HOME: sb!.home, SVC_SELFHOST_PROJECT: project, CI: '1' }, cwd: sb!.dir });
  const dc = (args: string[]) =>
    run(compose![0]!, [...compose!.slice(1), '-p', project, '-f', composeFile, '--env-file', envFile(), ...args], {
      env: { ...process.env, SVC_ENV_FILE: envFile(), SVC_COMPOSE_DIR: path.dirname(composeFile) },
      maxBuffer: 16 << 20,
    });
  const timed: Record<string, number> = {};
  const time = async <T>(what: string, fn: () => Promise<T>): Promise<T> => {
    const t = Date.now();
    try {
      return await fn();
    } finally {
      timed[what] = (Date.now() - t) / 1000;
    }
  };

  before(async function () {
    if (!dockerUp()) return skipUnlessCi(this, 'no Docker engine');
    compose = composeCommand();
    if (!compose) return skipUnlessCi(this, 'neither docker compose nor docker-compose is installed');
    // The images: built when missing (CI builds them before the suite; both builds are cached).
    const has = (image: string, check: string) =>
      run('docker', ['run', '--rm', '--network', 'none', '--entrypoint', 'sh', image, '-c', check]).then(
        () => true,
        () => false,
      );
    // Locally built images: CI builds them before the suite; elsewhere a missing (or stale) one is a skip that says how to build it.
    if (!(await has(postgresImage, 'command -v postgres && command -v pg_isready'))) {
      if (!process.env.CI) return skipUnlessCi(this, `image ${postgresImage} is not built here (ops/postgres-image.sh --tag ${postgresImage} builds it, as root; CI builds it before the suite)`);
      if (process.getuid?.() !== 0) return skipUnlessCi(this, `${postgresImage} is missing and ops/postgres-image.sh needs root`);
      await time('postgres image', () => run(path.join(projectRoot, 'ops', 'postgres-image.sh'), ['--tag', postgresImage], { cwd: projectRoot }));
    }
    if (!(await has(serverImage, 'command -v bwrap && command -v mount && command -v setpriv && test -f /opt/svc/server/dist/agentd/svc-entrypoint.js'))) {
      // Missing, or built before it carried bwrap, the sandbox daemon, and mount and setpriv (the compose entrypoint).
      if (!process.env.CI) return skipUnlessCi(this, `image ${serverImage} is not built here, or is older than bwrap, the sandbox daemon, mount and setpriv in it (ops/server-image.sh --tag ${serverImage} builds it; CI builds it before the suite)`);
      await time('server image', () => run(path.join(projectRoot, 'ops', 'server-image.sh'), ['--tag', serverImage], { cwd: projectRoot }));
    }
    sb = await sandbox();
    ports = { api: await freePort(), worker: await freePort(), pg: await freePort() };
  });

  afterEach(async function () {
    // A failure in CI is read from its log: the services' last lines go there.
    if (this.currentTest?.state !== 'failed' || !compose || !sb) return;
    const logs = await dc(['logs', '--no-color', '--tail', '40']).then((r) => r.stdout + r.stderr, (e: Error) => e.message);
    console.log(logs.replace(/^/gm, '    | '));
  });

  after(async function () {
    this.timeout(180_000);
    if (compose && sb) await dc(['down', '-v', '--remove-orphans', '--timeout', '20']).catch((e: Error) => console.log(`    compose down failed: ${e.message}`));
    await work?.cleanup();
    await sb?.cleanup();
    if (Object.keys(timed).length) console.log(`    timings (s): ${JSON.stringify(timed)}`);
  });

  it('comes up on 127.0.0.1 without a bridge network; a CR pushed, opened and merged over HTTP survives svc self-host stop / start', async () => {
    const set = await svc([
      'self-host',
      'env',
      'set',
      `SVC_PORT=${ports.api}`,
      `SVC_WORKER_PORT=${ports.worker}`,
      `SVC_PG_PORT=${ports.pg}`,
      `SVC_PUBLIC_URL=http://localhost:${ports.api}`,
      `SVC_POSTGRES_IMAGE=${postgresImage}`,
      `SVC_SERVER_IMAGE=${serverImage}`,
    ]);
    expect(set.code, set.stderr).to.equal(0);

    const started = await time('first start', () => svc(['self-host', 'start', '--yes']));
    expect(started.code, started.stderr).to.equal(0);
    expect(started.stderr).to.contain(`(project ${project})`).and.contain('logged in to host selfhost as admin@selfhost.local');
    const token = (await readConfig(path.join(sb!.home, '.config', 'svc', 'config.json'))).hosts.selfhost!.token!;
    expect(token).to.match(/^svc_pat_/);

    // Host networking only: every container in the host's namespace, no network of the project.
    const ids = (await dc(['ps', '-q'])).stdout.trim().split('\n').filter(Boolean);
    const containers = (await run('docker', ['inspect', '-f', '{{index .Config.Labels "com.docker.compose.service"}} {{.HostConfig.NetworkMode}} {{.State.Status}}', ...ids])).stdout.trim().split('\n').sort();
    expect(containers).to.deep.equal(['api host running', 'migrate host exited', 'postgres host running', 'worker host running']);
    expect((await run('docker', ['network', 'ls', '-q', '--filter', `name=${project}`])).stdout.trim()).to.equal('');
    // PostgreSQL, the API and the worker listen on loopback only.
    expect(listeners(ports.pg)).to.deep.equal(['127.0.0.1']);
    expect(listeners(ports.api)).to.deep.equal(['127.0.0.1']);
    expect(listeners(ports.worker)).to.deep.equal(['127.0.0.1']);
    // PostgreSQL asks for the password over TCP: a wrong one is refused.
    const intruder = new pg.Client({ host: '127.0.0.1', port: ports.pg, user: 'svc', password: 'wrong', database: 'svc' });
    const refused = await intruder.connect().then(
      () => null,
      (e: { code?: string }) => e.code,
    );
    await intruder.end().catch(() => {});
    expect(refused).to.equal('28P01'); // invalid_password

    // A managed project; a branch pushed over smart HTTP; a CR opened and merged (by the worker).
    const url = `http://127.0.0.1:${ports.api}`;
    const api = client(url, token);
    const created = await api.post('/v1/projects', { name: 'Compose', slug: 'compose' });
    expect(created.status, JSON.stringify(created.body)).to.equal(201);
    const repoUrl = (created.body.project.repo_url as string).replace(/^http:\/\/localhost:/, 'http://127.0.0.1:');
    work = await workDir('svc-compose-');
    await work.ok(['init', '-q', '-b', 'main']);
    await work.commit({ 'README.md': 'compose\n' }, 'first');
    await work.ok(['push', '-q', authedUrl(repoUrl, token), 'main']);
    await work.ok(['checkout', '-q', '-b', 'feature']);
    const head = await work.commit({ 'feature.txt': 'through the stack\n' }, 'feature');
    await work.ok(['push', '-q', authedUrl(repoUrl, token), 'feature']);
    const cr = await api.post('/v1/projects/compose/change-requests', { title: 'Through compose', head_ref: 'feature' });
    expect(cr.status, JSON.stringify(cr.body)).to.equal(201);
    const number = cr.body.change_request.number as number;
    const merged = await api.post(`/v1/projects/compose/change-requests/${number}/merge`, {});
    expect(merged.status, JSON.stringify(merged.body)).to.equal(200);
    expect(merged.body.change_request.status).to.equal('merged');
    const mergeSha = merged.body.change_request.merge_commit_sha as string;
    expect(mergeSha).to.equal(head); // fast-forward

    // A session: the worker starts its bwrap sandbox, whose daemon clones the default
    // branch (the merge included) through the sandbox's gateway socket, served by the
    // worker's in-process API. (No agent runtime is in the server image: the session
    // itself stays provisioning; the clone is what crosses the boundary.)
    const session = await api.post('/v1/projects/compose/sessions', {});
    expect(session.status, JSON.stringify(session.body)).to.equal(201);
    const workerId = (await dc(['ps', '-q', 'worker'])).stdout.trim();
    let cloned: string | undefined;
    // Each probe is a request and a `docker exec`: no pause needed between them; the test's timeout bounds the wait.
    await until(async () => {
      const s = await api.get(`/v1/projects/compose/sessions/${session.body.session.session_id}`);
      if (!s.body.session?.sandbox) return false;
      expect(s.body.session.sandbox.provider).to.equal('bwrap');
      const r = await run('docker', ['exec', workerId, 'sh', '-c', 'cat /var/lib/svc/sandboxes/*/workspace/feature.txt']).catch(() => undefined);
      cloned = r?.stdout;
      return cloned !== undefined;
    }, 'the sandbox cloned main');
    expect(cloned).to.equal('through the stack\n');

    const stopped = await time('stop', () => svc(['self-host', 'stop']));
    expect(stopped.code, stopped.stderr).to.equal(0);
    expect(stopped.stderr).to.contain(`volumes ${project}_pgdata and ${project}_data`);
    expect((await dc(['ps', '-q'])).stdout.trim()).to.equal('');
    expect(await fetch(`${url}/readyz`).then(() => 'up', () => 'down')).to.equal('down');

    const again = await time('second start', () => svc(['self-host', 'start', '--yes']));
    expect(again.code, again.stderr).to.equal(0);
    // The CR and the repository came back from the volumes.
    const shown = await api.get(`/v1/projects/compose/change-requests/${number}`);
    expect(shown.status, JSON.stringify(shown.body)).to.equal(200);
    expect(shown.body.change_request).to.include({ status: 'merged', merge_commit_sha: mergeSha, title: 'Through compose' });
    const remote = await gitOk(work.dir, ['ls-remote', authedUrl(repoUrl, token), 'refs/heads/main']);
    expect(remote.split(/\s+/)[0]).to.equal(mergeSha);
  });

  it('the api and worker containers run bwrap sandboxes: uid 1000 without capabilities, and a sandbox reaches no host port', async () => {
    const worker = (await dc(['ps', '-q', 'worker'])).stdout.trim();
    expect(worker, 'the worker is running').to.match(/^[0-9a-f]{12,}$/);
    // No service is privileged; the sandboxes' two run confined by seccomp (ops/seccomp-sandboxes.json).
    const ids = (await dc(['ps', '-q'])).stdout.trim().split('\n').filter(Boolean);
    const modes = (await run('docker', ['inspect', '-f', '{{index .Config.Labels "com.docker.compose.service"}} {{.HostConfig.Privileged}}', ...ids])).stdout.trim().split('\n');
    for (const m of modes) expect(m, m).to.match(/ false$/);
    // The server (pid 1 after the entrypoint's exec): uid 1000, no capability even in its bounding set, no-new-privileges, seccomp on.
    const status = (await run('docker', ['exec', '-u', '1000:1000', worker, 'cat', '/proc/1/status'])).stdout;
    expect(status).to.match(/^Uid:\s+1000\s+1000\s+1000\s+1000$/m);
    expect(status).to.match(/^CapEff:\s+0+$/m).and.match(/^CapBnd:\s+0+$/m).and.match(/^NoNewPrivs:\s+1$/m).and.match(/^Seccomp:\s+2$/m);
    const inWorker = (args: string[]) => run('docker', ['exec', '-u', '1000:1000', worker, ...args]).then((r) => r.stdout.trim());
    expect(await inWorker(['id', '-u'])).to.equal('1000');
    expect(await inWorker(['sh', '-c', "grep '^CapEff' /proc/self/status"])).to.match(/^CapEff:\s+0+$/);
    // The container's own /proc stays masked; the unmasked one bwrap relies on is out of the server's reach.
    expect(await inWorker(['sh', '-c', 'ls /run/svc-proc/proc >/dev/null 2>&1 && echo readable || echo hidden'])).to.equal('hidden');
    // The server's own probe of the bwrap provider (user, pid, ipc, uts namespaces and a fresh /proc).
    const probe = JSON.parse(await inWorker(['node', '-e', "import('/opt/svc/server/dist/infra/sandbox/bwrap.js').then((m) => console.log(JSON.stringify(m.probeBwrap())))"])) as { ok: boolean; reason?: string };
    expect(probe, probe.reason).to.deep.equal({ ok: true, path: '/usr/bin/bwrap' });
    // The API's port answers from the container (host network) and not from inside a
    // sandbox's network namespace, as the bwrap provider makes it (--unshare-net).
    const dial = `require('node:net').connect(${ports.api}, '127.0.0.1').on('connect', () => { console.log('open'); process.exit(0); }).on('error', () => { console.log('closed'); process.exit(0); })`;
    expect(await inWorker(['node', '-e', dial])).to.equal('open');
    const sandboxed = await inWorker([
      'bwrap', '--unshare-user', '--unshare-pid', '--unshare-ipc', '--unshare-uts', '--unshare-net',
      '--ro-bind', '/usr', '/usr', '--symlink', 'usr/bin', '/bin', '--symlink', 'usr/lib', '/lib', '--symlink', 'usr/lib64', '/lib64',
      '--proc', '/proc', '--dev', '/dev', '--tmpfs', '/tmp', '--', 'sh', '-c', `id -u; ls /proc | grep -c '^[0-9]'; node -e "${dial.replace(/"/g, '\\"')}"`,
    ]);
    const [uid, procs, answer] = sandboxed.split('\n');
    expect(uid).to.equal('1000');
    expect(Number(procs)).to.be.lessThan(5); // its own pid namespace: not the server's processes
    expect(answer).to.equal('closed');
  });
});
