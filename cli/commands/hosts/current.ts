import type { Argv } from 'yargs';
import type { Args } from '../../command-table.js';
import { readConfig } from '../../config.js';
import type { Factory } from '../../factory.js';
import { str, withHost } from '../../flags.js';
import { resolveHost } from '../../hosts.js';
import { findLink } from '../../link.js';

export interface HostsCurrentOptions {
  f: Factory;
  host?: string;
}

export const builder = (y: Argv) => withHost(y);

export const handler = (argv: Args, f: Factory) => run({ f, host: str(argv.host) });

/** The host a command run here would use (--host > SVC_API_URL > link > active). */
export async function run({ f, host }: HostsCurrentOptions): Promise<void> {
  const [config, link] = await Promise.all([readConfig(f.configPath), findLink(f.cwd)]);
  const r = resolveHost(config, f.env, host, link?.link);
  f.io.out.write(`${r.name}\n`);
  if (f.io.stderrIsTTY && r.source !== 'active') {
    const why = { flag: '--host', env: 'SVC_API_URL', link: link?.file ?? '.svc/link.json', active: '' }[r.source];
    f.io.err.write(`(from ${why})\n`);
  }
}
