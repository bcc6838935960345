import type { Argv } from 'yargs';
import type { Args } from '../../command-table.js';
import { CancelError, CliError, UsageError } from '../../errors.js';
import type { Factory } from '../../factory.js';
import { detectInstall, latestSpec, runThrough, shellLine } from '../../install.js';

export const builder = (y: Argv) => y.option('yes', { alias: 'y', type: 'boolean', describe: 'Do not ask for confirmation' });

/**
 * `svc update`: re-runs the install. Installed by ops/install.sh: the kept copy of the
 * script, with the package spec moved to @latest. Installed with `npm install -g`: the npm
 * command that upgrades it. Printed first; run after confirmation (or --yes).
 */
export const handler = async (argv: Args, f: Factory) => {
  const install = await detectInstall(f);
  let cmd: string;
  let args: string[];
  let env: Record<string, string> = {};
  if (install.method === 'install.sh') {
    const spec = latestSpec(install.package);
    if (install.script) {
      cmd = 'sh';
      args = [install.script];
      env = { SVC_PACKAGE: spec, SVC_HOME: install.home };
      if (install.shim) env.SVC_BIN_DIR = install.shim.slice(0, install.shim.lastIndexOf('/'));
    } else {
      cmd = 'npm';
      args = ['install', '--global', '--prefix', install.prefix, '--no-audit', '--no-fund', spec];
    }
  } else if (install.method === 'npm') {
    cmd = 'npm';
    args = ['install', '--global', `${install.packageName}@latest`];
  } else {
    throw new CliError(`svc runs from a source checkout (${install.root}); nothing to update here`, "update it with 'git pull && npm install && npm run build'");
  }
  const line = shellLine(cmd, args, env);
  const interactive = f.io.stdinIsTTY && f.io.stderrIsTTY;
  if (!argv.yes && !interactive) throw new UsageError(`not a terminal: pass --yes to run ${line}`);
  f.io.err.write(`svc ${f.version} (installed with ${install.method === 'install.sh' ? 'ops/install.sh' : 'npm'}). Update with:\n  ${line}\n`);
  if (!argv.yes && !(await f.prompter.confirm('Run it now?', true))) throw new CancelError('update cancelled');
  const code = await runThrough(f, cmd, args, env);
  if (code !== 0) throw new CliError(`the update command failed (exit ${code})`);
  f.io.err.write('Updated. Run `svc version` to see the new version.\n');
};
