import { lstat, rm } from 'node:fs/promises';
import path from 'node:path';
import type { Argv } from 'yargs';
import type { Args } from '../../command-table.js';
import { CancelError, CliError, UsageError } from '../../errors.js';
import type { Factory } from '../../factory.js';
import { detectInstall, ownsShim, runThrough, shellLine } from '../../install.js';

export const builder = (y: Argv) =>
  y
    .option('keep-home', { type: 'boolean', describe: 'Keep the ~/.svc home directory' })
    .option('keep-auth', { type: 'boolean', describe: 'Keep the stored hosts and tokens (the config file)' })
    .option('yes', { alias: 'y', type: 'boolean', describe: 'Do not ask for confirmation' });

const present = (p: string) =>
  lstat(p).then(
    () => true,
    () => false,
  );

interface Step {
  what: string;
  run(): Promise<void>;
}

/**
 * `svc uninstall [--keep-home] [--keep-auth]`: removes the CLI (the npm prefix ops/install.sh
 * made, or the global npm package), the /usr/local/bin shim where the script created one,
 * the ~/.svc home and the config file holding the stored tokens. Lists what it will remove,
 * then asks on a terminal (elsewhere --yes is required).
 */
export const handler = async (argv: Args, f: Factory) => {
  const keepHome = !!argv['keep-home'];
  const keepAuth = !!argv['keep-auth'];
  const install = await detectInstall(f);
  const steps: Step[] = [];
  const notes: string[] = [];

  if (install.method === 'install.sh') {
    if (install.shim && (await ownsShim(install.shim, install.prefix))) {
      const shim = install.shim;
      steps.push({ what: `the shim ${shim}`, run: () => rm(shim, { force: true }) });
    }
    const insideHome = install.prefix.startsWith(install.home + path.sep);
    if (!insideHome || keepHome) {
      const prefix = install.prefix;
      steps.push({ what: `the CLI (${prefix})`, run: () => rm(prefix, { recursive: true, force: true }) });
      if (keepHome) {
        for (const file of ['install.json', 'install.sh']) {
          const p = path.join(install.home, file);
          if (await present(p)) steps.push({ what: p, run: () => rm(p, { force: true }) });
        }
      }
    }
  } else if (install.method === 'npm') {
    const args = ['uninstall', '--global', install.packageName];
    steps.push({
      what: `the CLI (${shellLine('npm', args)})`,
      run: async () => {
        const code = await runThrough(f, 'npm', args);
        if (code !== 0) throw new CliError(`npm uninstall failed (exit ${code})`);
      },
    });
  } else {
    notes.push(`the CLI itself runs from a source checkout (${install.root}) and is left in place`);
  }
  if (!keepHome && (await present(install.home))) {
    const what = install.method === 'install.sh' && install.prefix.startsWith(install.home + path.sep) ? `the CLI and the home directory ${install.home}` : `the home directory ${install.home}`;
    steps.push({ what, run: () => rm(install.home, { recursive: true, force: true }) });
    if (await present(path.join(install.home, 'selfhost'))) {
      notes.push("the self-host stack's containers and volumes are not touched (stop them first with 'svc self-host stop')");
    }
  }
  if (!keepAuth && (await present(f.configPath))) {
    steps.push({ what: `the stored hosts and tokens (${f.configPath})`, run: () => rm(f.configPath, { force: true }) });
  }

  if (steps.length === 0) {
    f.io.err.write(`Nothing to remove.${notes.length ? ` Note: ${notes.join('; ')}.` : ''}\n`);
    return;
  }
  if (!argv.yes && !(f.io.stdinIsTTY && f.io.stderrIsTTY)) {
    throw new UsageError(`not a terminal: pass --yes to remove ${steps.map((s) => s.what).join(', ')}`);
  }
  f.io.err.write(`This removes:\n${steps.map((s) => `  - ${s.what}\n`).join('')}${notes.map((n) => `Note: ${n}.\n`).join('')}`);
  if (!argv.yes && !(await f.prompter.confirm('Uninstall svc?', false))) throw new CancelError('uninstall cancelled');
  for (const s of steps) await s.run();
  f.io.err.write('svc is uninstalled.\n');
};
