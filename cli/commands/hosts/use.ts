import type { Argv } from 'yargs';
import type { Args } from '../../command-table.js';
import { readConfig, updateConfig } from '../../config.js';
import { CliError, UsageError } from '../../errors.js';
import type { Factory } from '../../factory.js';
import { str } from '../../flags.js';
import { activeHostName, hostExists, listHosts } from '../../hosts.js';

export interface HostsUseOptions {
  f: Factory;
  name?: string;
}

export const builder = (y: Argv) => y.positional('name', { type: 'string', describe: 'Host to make active (no name: pick one)' });

export const handler = (argv: Args, f: Factory) => run({ f, name: str(argv.name) });

export async function run({ f, name }: HostsUseOptions): Promise<void> {
  let target = name;
  if (!target) {
    if (!f.io.stdinIsTTY || !f.io.stdoutIsTTY) throw new UsageError('host name required when not running interactively');
    const hosts = listHosts(await readConfig(f.configPath));
    const current = hosts.findIndex((h) => h.active);
    const i = await f.prompter.select(
      'Which host should be active?',
      hosts.map((h) => `${h.name}  ${h.url}`),
      Math.max(0, current),
    );
    target = hosts[i]!.name;
  }
  const c = await readConfig(f.configPath);
  if (!hostExists(c, target)) throw new CliError(`unknown host "${target}"`, "see 'svc hosts ls'");
  const before = activeHostName(c);
  await updateConfig(f.configPath, (cfg) => {
    cfg.active_host = target;
  });
  f.io.err.write(before === target ? `${target} is already the active host\n` : `Active host: ${target}\n`);
}
