import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { chmod, lstat, mkdir, readFile, readlink, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { writeConfig } from '../../cli/config.js';
import { cliRoot } from '../../cli/install.js';
import { repoRoot, runSvc, sandbox, scriptedPrompter, type Sandbox } from './helpers.js';

const run = promisify(execFile);
const exists = (p: string) =>
  lstat(p).then(
    () => true,
    () => false,
  );

/** A tiny package named `svc` whose bin prints its version: what install.sh installs here (no registry). */
async function packSvc(dir: string, version: string): Promise<string> {
  const src = path.join(dir, `pkg-${version}`);
  await mkdir(path.join(src, 'bin'), { recursive: true });
  await writeFile(path.join(src, 'package.json'), JSON.stringify({ name: 'svc', version, bin: { svc: 'bin/svc.js' } }));
  await writeFile(path.join(src, 'bin', 'svc.js'), `#!/usr/bin/env node\nprocess.stdout.write('svc version ${version}\\n');\n`);
  const { stdout } = await run('npm', ['pack', '--silent', '--pack-destination', dir], { cwd: src });
  return path.join(dir, stdout.trim().split('\n').pop()!);
}

describe('svc update / svc uninstall and ops/install.sh (temporary HOME, real npm, no registry)', function () {
  this.timeout(120_000);
  let sb: Sandbox;
  let env: Record<string, string>;
  let binDir: string;
  let tarball: string;

  const install = () => run('sh', [path.join(repoRoot, 'ops', 'install.sh')], { env: { PATH: process.env.PATH!, HOME: sb.home, SVC_PACKAGE: tarball, SVC_BIN_DIR: binDir } });
  const svc = (args: string[], o: { tty?: boolean; answers?: boolean[]; env?: Record<string, string> } = {}) =>
    runSvc(args, { configPath: sb.configPath, env: o.env ?? env, cwd: sb.dir, tty: !!o.tty, prompter: scriptedPrompter(o.answers ?? []).prompter });
  const installedVersion = async () => (await run(path.join(binDir, 'svc'), ['version'])).stdout.trim();

  beforeEach(async () => {
    sb = await sandbox();
    binDir = path.join(sb.dir, 'usr-local-bin');
    await mkdir(binDir);
    tarball = await packSvc(sb.dir, '1.0.0');
    env = { PATH: process.env.PATH!, HOME: sb.home };
    await writeConfig(sb.configPath, { active_host: 'selfhost', hosts: { selfhost: { token: 'svc_pat_keepme' } } });
  });
  afterEach(() => sb.cleanup());

  it('install.sh installs into ~/.svc/cli with a shim; update re-runs it; uninstall --keep-auth removes the CLI, the shim and ~/.svc only', async () => {
    const out = await install();
    expect(out.stdout).to.contain('Installed svc version 1.0.0');
    const home = path.join(sb.home, '.svc');
    expect(await readlink(path.join(binDir, 'svc'))).to.equal(path.join(home, 'cli', 'bin', 'svc'));
    expect(await installedVersion()).to.equal('svc version 1.0.0');
    const rec = JSON.parse(await readFile(path.join(home, 'install.json'), 'utf8'));
    expect(rec).to.include({ method: 'install.sh', package: tarball, prefix: path.join(home, 'cli'), shim: path.join(binDir, 'svc') });
    expect(await exists(path.join(home, 'install.sh'))).to.equal(true);
    expect(((await lstat(home)).mode & 0o777).toString(8)).to.equal('700');

    // Off a terminal, update wants --yes: exit 2, one line, nothing run.
    const refused = await svc(['update']);
    expect(refused.code).to.equal(2);
    expect(refused.stderr.trim().split('\n')).to.have.length(1);
    expect(refused.stderr).to.match(/^error: not a terminal: pass --yes to run SVC_PACKAGE=.* sh .*\.svc\/install\.sh/);
    // On a terminal, declining changes nothing.
    const declined = await svc(['update'], { tty: true, answers: [false] });
    expect(declined.code).to.equal(1);
    expect(declined.stderr).to.contain(`sh ${path.join(home, 'install.sh')}`);

    // A new build of the same tarball: update re-runs the kept script with the recorded spec.
    await mkdir(path.join(sb.dir, 'next'));
    const v2 = await packSvc(path.join(sb.dir, 'next'), '2.0.0');
    await rename(v2, tarball);
    const updated = await svc(['update'], { tty: true, answers: [true] });
    expect(updated.code, updated.stderr).to.equal(0);
    expect(await installedVersion()).to.equal('svc version 2.0.0');

    const refusedRm = await svc(['uninstall', '--keep-auth']);
    expect(refusedRm.code).to.equal(2);
    expect(refusedRm.stderr.trim().split('\n')).to.have.length(1);
    expect(await exists(home)).to.equal(true);

    const gone = await svc(['uninstall', '--keep-auth', '--yes']);
    expect(gone.code, gone.stderr).to.equal(0);
    expect(gone.stderr).to.contain(`the shim ${path.join(binDir, 'svc')}`);
    expect(await exists(path.join(binDir, 'svc'))).to.equal(false);
    expect(await exists(home)).to.equal(false);
    expect(JSON.parse(await readFile(sb.configPath, 'utf8')).hosts.selfhost.token).to.equal('svc_pat_keepme');
  });

  it('uninstall on a terminal asks; --keep-home keeps ~/.svc but removes the CLI; the token goes unless kept; a shim it did not make is left alone', async () => {
    // Someone else's svc already in the bin dir: the installer leaves it and records no shim.
    await writeFile(path.join(binDir, 'svc'), '#!/bin/sh\necho other\n');
    await chmod(path.join(binDir, 'svc'), 0o755);
    const out = await install();
    expect(out.stderr).to.contain('was not installed by this script; left alone');
    const home = path.join(sb.home, '.svc');
    await mkdir(path.join(home, 'selfhost'), { recursive: true });
    await writeFile(path.join(home, 'selfhost', 'svc.env'), 'X=1\n');

    const no = await svc(['uninstall', '--keep-home'], { tty: true, answers: [false] });
    expect(no.code).to.equal(1);
    expect(await exists(path.join(home, 'cli'))).to.equal(true);

    const yes = await svc(['uninstall', '--keep-home'], { tty: true, answers: [true] });
    expect(yes.code, yes.stderr).to.equal(0);
    expect(await exists(path.join(home, 'cli'))).to.equal(false);
    expect(await exists(path.join(home, 'install.json'))).to.equal(false);
    expect(await exists(path.join(home, 'selfhost', 'svc.env'))).to.equal(true);
    expect(await exists(sb.configPath), 'the stored token is removed').to.equal(false);
    expect(await readFile(path.join(binDir, 'svc'), 'utf8')).to.contain('echo other');
  });

  it('an npm-installed CLI: update prints and runs npm install --global svc@latest; uninstall runs npm uninstall; a source checkout is refused with exit 1', async () => {
    // A stand-in npm that reports this checkout's parent as the global root and records calls.
    const fakeBin = path.join(sb.dir, 'fake-bin');
    await mkdir(fakeBin);
    const calls = path.join(sb.dir, 'npm-calls');
    await writeFile(
      path.join(fakeBin, 'npm'),
      `#!/bin/sh\nif [ "$1" = root ]; then echo "$FAKE_NPM_ROOT"; exit 0; fi\necho "$*" >> "${calls}"\necho "npm did $1"\n`,
    );
    await chmod(path.join(fakeBin, 'npm'), 0o755);
    const npmEnv = { ...env, PATH: `${fakeBin}:${process.env.PATH}`, FAKE_NPM_ROOT: path.dirname(cliRoot) };
    const up = await svc(['update', '--yes'], { env: npmEnv });
    expect(up.code, up.stderr).to.equal(0);
    expect(up.stderr).to.contain('installed with npm').and.contain('npm install --global svc@latest').and.contain('npm did install');
    const rm = await svc(['uninstall', '--yes'], { env: npmEnv });
    expect(rm.code, rm.stderr).to.equal(0);
    expect((await readFile(calls, 'utf8')).trim().split('\n')).to.deep.equal(['install --global svc@latest', 'uninstall --global svc']);

    const src = await svc(['update', '--yes'], { env: { ...npmEnv, FAKE_NPM_ROOT: '/nonexistent/lib/node_modules' } });
    expect(src.code).to.equal(1);
    expect(src.stderr.trim().split('\n')[0]).to.match(/^error: svc runs from a source checkout/);
  });
});
