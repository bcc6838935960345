import type { Argv } from 'yargs';
import type { Args } from '../../command-table.js';
import { readConfig, updateConfig } from '../../config.js';
import { CliError } from '../../errors.js';
import type { Factory } from '../../factory.js';
import { BUILTIN_HOSTS, normalizeUrl } from '../../hosts.js';

export interface HostsAddOptions {
  f: Factory;
  name: string;
  url: string;
  login: boolean;
  use: boolean;
}

export const builder = (y: Argv) =>
  y
    .positional('name', { type: 'string', describe: 'Name for the host' })
    .option('url', { type: 'string', demandOption: true, requiresArg: true, describe: 'API URL (with or without /v1)' })
    .option('login', { type: 'boolean', describe: 'Log in to the new host right away' })
    .option('use', { type: 'boolean', describe: 'Make it the active host' });

export const handler = (argv: Args, f: Factory) =>
  run({ f, name: String(argv.name), url: String(argv.url), login: !!argv.login, use: !!argv.use });

const NAME = /^[A-Za-z0-9][A-Za-z0-9._:-]*$/;

export async function run({ f, name, url, login, use }: HostsAddOptions): Promise<void> {
  if (!NAME.test(name)) throw new CliError(`invalid host name "${name}": use letters, digits, '.', '_', ':' and '-'`);
  if (name in BUILTIN_HOSTS) throw new CliError(`"${name}" is a built-in host`, `log in to it with 'svc login --host ${name}'`);
  const normalized = normalizeUrl(url);
  const existing = (await readConfig(f.configPath)).hosts[name];
  if (existing?.url && existing.url !== normalized) throw new CliError(`host "${name}" already exists with URL ${existing.url}`, `remove it first with 'svc hosts rm ${name}'`);
  await updateConfig(f.configPath, (c) => {
    c.hosts[name] = { ...c.hosts[name], url: normalized };
    if (use) c.active_host = name;
  });
  f.io.err.write(`Added host ${name} (${normalized})\n`);
  if (login) {
    const { run: runLogin } = await import('../login.js');
    await runLogin({ f, host: name });
  }
}
