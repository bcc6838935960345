import type { Argv } from 'yargs';
import type { Args } from '../../command-table.js';
import { readConfig } from '../../config.js';
import type { Factory } from '../../factory.js';
import { withJson } from '../../flags.js';
import { listHosts } from '../../hosts.js';
import { colors, printJson, printTable } from '../../output.js';

export interface HostsLsOptions {
  f: Factory;
  json: boolean;
}

export const builder = (y: Argv) => withJson(y);

export const handler = (argv: Args, f: Factory) => run({ f, json: !!argv.json });

export async function run({ f, json }: HostsLsOptions): Promise<void> {
  const hosts = listHosts(await readConfig(f.configPath));
  if (json) {
    printJson(
      f.io,
      hosts.map((h) => ({ name: h.name, url: h.url, active: h.active, builtin: h.builtin, logged_in: !!h.token, ...(h.user ? { user: h.user } : {}) })),
    );
    return;
  }
  const c = colors(f.io, f.env);
  printTable(
    f.io,
    ['', 'name', 'url', 'status'],
    hosts.map((h) => [
      h.active ? (f.io.stdoutIsTTY ? c.green('*') : '*') : '',
      h.name,
      h.url,
      [h.token ? `logged in${h.user ? ` as ${h.user}` : ''}` : 'not logged in', h.builtin ? 'built-in' : ''].filter(Boolean).join(', '),
    ]),
    c,
  );
}
