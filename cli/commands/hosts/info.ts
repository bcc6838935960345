import type { Argv } from 'yargs';
import type { Args } from '../../command-table.js';
import { readConfig } from '../../config.js';
import type { Factory } from '../../factory.js';
import { str, withJson } from '../../flags.js';
import { activeHostName, envToken, hostView, maskToken } from '../../hosts.js';
import { printJson } from '../../output.js';

export interface HostsInfoOptions {
  f: Factory;
  name?: string;
  json: boolean;
}

export const builder = (y: Argv) => withJson(y.positional('name', { type: 'string', describe: 'Host (default: the active one)' }));

export const handler = (argv: Args, f: Factory) => run({ f, name: str(argv.name), json: !!argv.json });

export async function run({ f, name, json }: HostsInfoOptions): Promise<void> {
  const c = await readConfig(f.configPath);
  const h = hostView(c, name ?? activeHostName(c));
  const et = envToken(f.env);
  const token = et ? maskToken(et.token) : h.token ? maskToken(h.token) : null;
  const tokenSource = et ? et.source : h.token ? 'config' : null;
  const info = { name: h.name, url: h.url, api_url: `${h.url}/v1`, active: h.active, builtin: h.builtin, user: h.user ?? null, token, token_source: tokenSource };
  if (json) return printJson(f.io, info);
  const rows: Array<[string, string]> = [
    ['name', info.name],
    ['url', info.url],
    ['api', info.api_url],
    ['active', info.active ? 'yes' : 'no'],
    ['built-in', info.builtin ? 'yes' : 'no'],
    ['user', info.user ?? ''],
    ['token', token ? `${token} (${tokenSource})` : 'none'],
  ];
  for (const [k, v] of rows) f.io.out.write(`${k}:\t${v}\n`);
}
