/** `cr close` and `cr reopen`: the same shape, a different endpoint. */
import type { Argv } from 'yargs';
import type { Args } from '../../command-table.js';
import { parseCrRef, projectContext } from '../../context.js';
import type { Factory } from '../../factory.js';
import { str } from '../../flags.js';
import { printJson } from '../../output.js';
import { crTarget } from './shared.js';

export interface CrStateOptions {
  f: Factory;
  action: 'close' | 'reopen';
  cr: string;
  project?: string;
  host?: string;
  json: boolean;
}

export const builder = (y: Argv) => crTarget(y);

export const handlerFor = (action: CrStateOptions['action']) => (argv: Args, f: Factory) =>
  run({ f, action, cr: String(argv.cr), project: str(argv.project), host: str(argv.host), json: !!argv.json });

export async function run({ f, action, cr: ref, project, host, json }: CrStateOptions): Promise<void> {
  const crId = parseCrRef(ref);
  const ctx = await projectContext(f, { json, ...(host ? { host } : {}), ...(project ? { project } : {}) });
  const cr = action === 'close' ? await ctx.api.close(ctx.projectId, crId) : await ctx.api.reopen(ctx.projectId, crId);
  if (json) return printJson(f.io, cr);
  f.io.err.write(`${action === 'close' ? 'Closed' : 'Reopened'} change request #${cr.number}\n`);
}
