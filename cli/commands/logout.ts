import type { Argv } from 'yargs';
import type { Args } from '../command-table.js';
import { readConfig, updateConfig } from '../config.js';
import { CliError } from '../errors.js';
import type { Factory } from '../factory.js';
import { str } from '../flags.js';
import { activeHostName, envToken, hostExists } from '../hosts.js';

export interface LogoutOptions {
  f: Factory;
  host?: string;
}

export const builder = (y: Argv) => y.option('host', { type: 'string', requiresArg: true, describe: 'Host to log out of (default: the active host)' });

export const handler = (argv: Args, f: Factory) => run({ f, host: str(argv.host) });

export async function run({ f, host }: LogoutOptions): Promise<void> {
  const c = await readConfig(f.configPath);
  const name = host ?? activeHostName(c);
  if (!hostExists(c, name)) throw new CliError(`unknown host "${name}"`, "see 'svc hosts ls'");
  if (!c.hosts[name]?.token) throw new CliError(`not logged in to ${name}`);
  await updateConfig(f.configPath, (cfg) => {
    const entry = cfg.hosts[name];
    if (!entry) return;
    delete entry.token;
    delete entry.user;
    if (Object.keys(entry).length === 0) delete cfg.hosts[name];
  });
  f.io.err.write(`Logged out of ${name}\n`);
  const et = envToken(f.env);
  if (et) f.io.err.write(`note: ${et.source} is set in the environment and is still used\n`);
}
