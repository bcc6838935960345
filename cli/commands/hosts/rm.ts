import type { Argv } from 'yargs';
import type { Args } from '../../command-table.js';
import { readConfig, updateConfig } from '../../config.js';
import { CancelError, CliError, UsageError } from '../../errors.js';
import type { Factory } from '../../factory.js';
import { BUILTIN_HOSTS, activeHostName } from '../../hosts.js';

export interface HostsRmOptions {
  f: Factory;
  name: string;
  yes: boolean;
}

export const builder = (y: Argv) =>
  y.positional('name', { type: 'string', describe: 'Host to remove' }).option('yes', { alias: 'y', type: 'boolean', describe: 'Do not ask for confirmation' });

export const handler = (argv: Args, f: Factory) => run({ f, name: String(argv.name), yes: !!argv.yes });

/**
 * Removes an added host and its token. Built-ins cannot go. Removing the last added host
 * asks first (on a terminal; `--yes` elsewhere).
 */
export async function run({ f, name, yes }: HostsRmOptions): Promise<void> {
  const c = await readConfig(f.configPath);
  if (name in BUILTIN_HOSTS) throw new CliError(`"${name}" is a built-in host and cannot be removed`, `'svc logout --host ${name}' removes its token`);
  if (!(name in c.hosts)) throw new CliError(`unknown host "${name}"`, "see 'svc hosts ls'");
  const added = Object.keys(c.hosts).filter((n) => !(n in BUILTIN_HOSTS));
  if (added.length === 1 && !yes) {
    if (!f.io.stdinIsTTY || !f.io.stdoutIsTTY) throw new UsageError(`--yes required to remove the last added host "${name}" when not running interactively`);
    if (!(await f.prompter.confirm(`"${name}" is the last added host. Remove it?`))) throw new CancelError('host not removed');
  }
  const wasActive = activeHostName(c) === name;
  await updateConfig(f.configPath, (cfg) => {
    delete cfg.hosts[name];
    if (cfg.active_host === name) delete cfg.active_host;
  });
  f.io.err.write(`Removed host ${name}\n`);
  if (wasActive) f.io.err.write(`Active host: ${activeHostName(await readConfig(f.configPath))}\n`);
}
