import type { Argv } from 'yargs';
import type { Args } from '../command-table.js';
import { hostContext } from '../context.js';
import type { Factory } from '../factory.js';
import { str, withHost, withJson } from '../flags.js';
import { printJson } from '../output.js';

export interface WhoamiOptions {
  f: Factory;
  host?: string;
  json: boolean;
}

export const builder = (y: Argv) => withJson(withHost(y));

export const handler = (argv: Args, f: Factory) => run({ f, host: str(argv.host), json: !!argv.json });

export async function run({ f, host, json }: WhoamiOptions): Promise<void> {
  const ctx = await hostContext(f, { json, ...(host ? { host } : {}) }, false);
  const me = await ctx.api.me();
  if (json) return printJson(f.io, me);
  const who = me.user.name ? `${me.user.name} <${me.user.email}>` : me.user.email;
  f.io.out.write(`${who}\n`);
  if (me.account) f.io.out.write(`account: ${me.account.name} (${me.account.account_id})\n`);
  f.io.out.write(`host: ${ctx.host.name} (${ctx.host.url})\n`);
}
