import { expect } from 'chai';
import { chmod, mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { readConfig } from '../../cli/config.js';
import { cliRoot } from '../../cli/install.js';
import { freePort, traversableTempDir } from '../support/server.js';
import { fixtureRepo, type FixtureRepo } from '../support/repo.js';
import { client } from '../support/http.js';
import { repoRoot, runSvc, sandbox, scriptedPrompter, type Sandbox } from './helpers.js';
import { rm } from 'node:fs/promises';

/**
 * A stand-in `docker` for `docker compose`: `up -d` runs a real `svc-server start` (embedded
 * PostgreSQL, data dir kept between runs like a volume) with the env file's variables,
 * `exec -T api svc-server ...` runs the real admin command, `down` stops it (SIGTERM),
 * `logs` prints its log. Every call is recorded.
 */
const FAKE_DOCKER = `#!/usr/bin/env node
const { spawn, spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const state = process.env.FAKE_STATE;
const args = process.argv.slice(2);
fs.appendFileSync(path.join(state, 'calls'), JSON.stringify(args) + '\\n');
if (args[0] !== 'compose') process.exit(1);
let rest = args.slice(1);
if (rest[0] === 'version') { console.log('Docker Compose version v2.99.0-fake'); process.exit(0); }
const opts = {};
while (rest[0] && rest[0].startsWith('-')) { opts[rest[0]] = rest[1]; rest = rest.slice(2); }
const envFile = opts['--env-file'];
const vars = {};
for (const line of fs.readFileSync(envFile, 'utf8').split('\\n')) {
  const m = /^([A-Za-z_][A-Za-z0-9_]*)=(.*)$/.exec(line);
  if (m) vars[m[1]] = m[2];
}
const server = ${JSON.stringify(path.join(repoRoot, 'dist', 'ops', 'svc-server.js'))};
const env = { ...process.env, ...vars, PORT: vars.SVC_PORT || '8080', HOST: '127.0.0.1', SVC_DATA_DIR: path.join(state, 'data'), LOG_LEVEL: 'warn' };
delete env.DATABASE_URL;
const pidFile = path.join(state, 'pid');
const alive = (pid) => { try { process.kill(pid, 0); return true; } catch { return false; } };
const cmd = rest[0];
if (cmd === 'up') {
  if (process.env.FAKE_UP_FAIL) { console.error('Error: image svc-server:local not found'); process.exit(1); }
  if (fs.existsSync(pidFile) && alive(Number(fs.readFileSync(pidFile, 'utf8')))) process.exit(0);
  const log = fs.openSync(path.join(state, 'server.log'), 'a');
  const child = spawn(process.execPath, [server, 'start'], { env, detached: true, stdio: ['ignore', log, log] });
  fs.writeFileSync(pidFile, String(child.pid));
  child.unref();
  console.log('Container svc-selfhost-api-1  Started');
  process.exit(0);
}
if (cmd === 'exec') {
  const i = rest.indexOf('svc-server');
  const r = spawnSync(process.execPath, [server, ...rest.slice(i + 1)], { env, encoding: 'utf8' });
  process.stdout.write(r.stdout); process.stderr.write(r.stderr);
  process.exit(r.status ?? 1);
}
if (cmd === 'down') {
  if (fs.existsSync(pidFile)) {
    const pid = Number(fs.readFileSync(pidFile, 'utf8'));
    if (alive(pid)) process.kill(pid, 'SIGTERM');
    const deadline = Date.now() + 30000;
    while (alive(pid) && Date.now() < deadline) spawnSync('sleep', ['0.1']);
    fs.rmSync(pidFile);
  }
  console.log('Container svc-selfhost-api-1  Removed');
  process.exit(0);
}
if (cmd === 'logs') { process.stdout.write(fs.existsSync(path.join(state, 'server.log')) ? fs.readFileSync(path.join(state, 'server.log'), 'utf8') : ''); console.log('api-1  | fake log line'); process.exit(0); }
process.exit(2);
`;

describe('svc self-host (a faked compose runtime running the real server)', function () {
  this.timeout(180_000);
  let sb: Sandbox;
  let state: string;
  let fakeBin: string;
  let repo: FixtureRepo;
  let port: number;

  const env = (extra: Record<string, string> = {}) => ({ PATH: `${fakeBin}:${process.env.PATH}`, HOME: sb.home, FAKE_STATE: state, ...extra });
  const svc = (args: string[], o: { tty?: boolean; answers?: Array<number | boolean>; env?: Record<string, string> } = {}) => {
    const p = scriptedPrompter(o.answers ?? []);
    return runSvc(args, { configPath: sb.configPath, env: o.env ?? env(), cwd: sb.dir, tty: !!o.tty, prompter: p.prompter }).then((r) => ({ ...r, asked: p.asked }));
  };
  const calls = async () => (await readFile(path.join(state, 'calls'), 'utf8')).trim().split('\n').map((l) => JSON.parse(l) as string[]);
  const envFile = () => path.join(sb.home, '.svc', 'selfhost', 'svc.env');

  before(async () => {
    sb = await sandbox();
    state = await traversableTempDir('svc-selfhost-');
    fakeBin = path.join(state, 'bin');
    await mkdir(fakeBin);
    await writeFile(path.join(fakeBin, 'docker'), FAKE_DOCKER);
    await chmod(path.join(fakeBin, 'docker'), 0o755);
    // The fake is CommonJS; the state dir has no package.json with "type": "module".
    repo = await fixtureRepo();
    port = await freePort();
  });
  after(async () => {
    await svc(['self-host', 'stop']).catch(() => {});
    await sb.cleanup();
    await repo.cleanup();
    await rm(state, { recursive: true, force: true });
  });

  it('start creates the config (0600, generated keys), brings the stack up, waits for /readyz and logs in to selfhost; stop and start keep every CR', async () => {
    const set = await svc(['self-host', 'env', 'set', `SVC_PORT=${port}`, `SVC_PUBLIC_URL=http://localhost:${port}`, 'SVC_ALLOW_FILE_REPOS=1']);
    expect(set.code, set.stderr).to.equal(0);
    expect((await stat(envFile())).mode & 0o777).to.equal(0o600);
    const text = await readFile(envFile(), 'utf8');
    expect(text).to.match(/^POSTGRES_PASSWORD=[A-Za-z0-9_-]{32}$/m);
    expect(Buffer.from(/^SVC_SECRET_KEY=(.*)$/m.exec(text)![1]!, 'base64')).to.have.length(32);

    const started = await svc(['self-host', 'start', '--yes']);
    expect(started.code, started.stderr).to.equal(0);
    expect(started.asked).to.deep.equal([]);
    expect(started.stderr).to.contain('Starting svc with docker compose').and.contain('Container svc-selfhost-api-1  Started').and.contain(`logged in to host selfhost as admin@selfhost.local`);
    const up = (await calls()).find((c) => c.includes('up'))!;
    expect(up).to.deep.equal(['compose', '-p', 'svc-selfhost', '-f', path.join(cliRoot, 'ops', 'compose.yaml'), '--env-file', envFile(), 'up', '-d']);
    const config = await readConfig(sb.configPath);
    expect(config.active_host).to.equal('selfhost');
    expect(config.hosts.selfhost!.url).to.equal(`http://localhost:${port}`);
    const token = config.hosts.selfhost!.token!;
    expect(token).to.match(/^svc_pat_/);
    const who = await svc(['whoami'], { env: env() });
    expect(who.code, who.stderr).to.equal(0);
    expect(who.stdout).to.contain('admin@selfhost.local').and.contain('host: selfhost');

    // Some work on the stack.
    const api = client(`http://127.0.0.1:${port}`, token);
    expect((await api.post('/v1/projects', { name: 'Kept', slug: 'kept', repo_url: repo.url })).status).to.equal(201);
    await repo.commit('feat', { 'f.txt': 'f\n' });
    expect((await api.post('/v1/projects/kept/change-requests', { title: 'Survives a restart', head_ref: 'feat' })).status).to.equal(201);

    const stopped = await svc(['self-host', 'stop']);
    expect(stopped.code, stopped.stderr).to.equal(0);
    expect(stopped.stderr).to.contain('The data is kept');
    expect(await fetch(`http://127.0.0.1:${port}/readyz`).then(() => 'up', () => 'down')).to.equal('down');

    const again = await svc(['self-host', 'start', '--yes']);
    expect(again.code, again.stderr).to.equal(0);
    // The stored token still works: no second bootstrap.
    expect((await calls()).filter((c) => c.includes('bootstrap'))).to.have.length(1);
    expect((await readConfig(sb.configPath)).hosts.selfhost!.token).to.equal(token);
    const ls = await svc(['cr', 'ls', '--project', 'kept']);
    expect(ls.code, ls.stderr).to.equal(0);
    expect(ls.stdout).to.contain('Survives a restart');
  });

  it('env ls masks populated secrets; env set refuses a bad assignment with exit 2; logs passes one service through', async () => {
    expect((await svc(['self-host', 'env', 'set', 'SVC_GIT_TOKEN=ghp_abcdefghijklmnop1234'])).code).to.equal(0);
    const ls = await svc(['self-host', 'env', 'ls']);
    expect(ls.code).to.equal(0);
    const lines = ls.stdout.trim().split('\n');
    expect(lines).to.include(`SVC_PORT=${port}`);
    expect(lines).to.include('SVC_GIT_TOKEN=********1234');
    expect(lines.find((l) => l.startsWith('POSTGRES_PASSWORD='))).to.match(/^POSTGRES_PASSWORD=\*{8}.{4}$/);
    expect(lines.find((l) => l.startsWith('SVC_SECRET_KEY='))).to.match(/^SVC_SECRET_KEY=\*{8}.{4}$/);
    expect(ls.stdout).to.not.contain('ghp_abcdefghijklmnop');

    const bad = await svc(['self-host', 'env', 'set', 'NOVALUE']);
    expect(bad.code).to.equal(2);
    expect(bad.stderr.trim().split('\n')).to.have.length(1);
    expect((await svc(['self-host', 'env', 'frobnicate'])).code).to.equal(2);

    const logs = await svc(['self-host', 'logs', 'api', '--no-follow']);
    expect(logs.code, logs.stderr).to.equal(0);
    expect(logs.stdout).to.contain('api-1  | fake log line');
    expect((await calls()).pop()!.slice(-4)).to.deep.equal(['logs', '--tail', '200', 'api']);
    expect((await svc(['self-host', 'logs', 'nginx'])).code).to.equal(2);
  });

  it('first interactive setup asks only the optional integrations; CI or --yes skips them; no compose runtime is exit 1 with a hint', async () => {
    const fresh = await sandbox();
    try {
      const e = { PATH: `${fakeBin}:${process.env.PATH}`, HOME: fresh.home, FAKE_STATE: state };
      const run = (args: string[], o: { tty: boolean; answers?: Array<number | boolean>; env?: Record<string, string> }) => {
        const p = scriptedPrompter(o.answers ?? []);
        return runSvc(args, { configPath: fresh.configPath, env: o.env ?? e, cwd: fresh.dir, tty: o.tty, prompter: p.prompter }).then((r) => ({ ...r, asked: p.asked }));
      };
      // CI on a terminal: no questions; the (failing) compose run is exit 1 with one error line.
      const ci = await run(['self-host', 'start'], { tty: true, env: { ...e, CI: 'true', FAKE_UP_FAIL: '1' } });
      expect(ci.asked).to.deep.equal([]);
      expect(ci.code).to.equal(1);
      expect(ci.stderr.trim().split('\n').pop()).to.match(/^error: docker compose up failed \(exit 1\)/);
      const file = path.join(fresh.home, '.svc', 'selfhost', 'svc.env');
      expect(await readFile(file, 'utf8')).to.not.contain('SVC_GIT_TOKEN');

      const conf = await run(['self-host', 'configure'], { tty: true, answers: [true, 2, false] });
      expect(conf.code, conf.stderr).to.equal(0);
      expect(conf.asked).to.deep.equal(['Enable app deployment?', 'Access to private repositories', 'Enable app connectors (Slack)?']);
      const text = await readFile(file, 'utf8');
      expect(text).to.match(/^SVC_APPS_ENABLED=1$/m).and.match(/^SVC_APPS_DOMAIN=$/m).and.match(/^SVC_GIT_TOKEN=$/m);
      expect(text).to.not.contain('SVC_GITHUB_APP_ID').and.not.contain('SVC_CONNECTORS_ENABLED');
      expect(conf.stderr).to.contain('svc self-host env set SVC_APPS_DOMAIN=... SVC_GIT_TOKEN=...');

      const offTty = await run(['self-host', 'configure'], { tty: false });
      expect(offTty.code).to.equal(2);

      const none = await run(['self-host', 'stop'], { tty: false, env: { ...e, PATH: path.join(state, 'empty') } });
      expect(none.code).to.equal(1);
      expect(none.stderr).to.match(/^error: no container compose runtime found/);
    } finally {
      await fresh.cleanup();
    }
  });
});
