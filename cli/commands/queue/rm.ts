import type { Argv } from 'yargs';
import type { Args } from '../../command-table.js';
import { parseCrRef, projectContext } from '../../context.js';
import type { Factory } from '../../factory.js';
import { str } from '../../flags.js';
import { printJson } from '../../output.js';
import { crTarget } from '../cr/shared.js';
import { queuePath } from './ls.js';

export const builder = (y: Argv) => crTarget(y);
export const handler = (argv: Args, f: Factory) => run(f, { cr: String(argv.cr), project: str(argv.project), host: str(argv.host), json: !!argv.json });

/** `svc queue rm <cr>`: a person takes a CR out of its merge queue (by_person); one not queued is an error (exit 1). */
export async function run(f: Factory, o: { cr: string; project?: string | undefined; host?: string | undefined; json: boolean }): Promise<void> {
  const crId = parseCrRef(o.cr);
  const ctx = await projectContext(f, { json: o.json, ...(o.host ? { host: o.host } : {}), ...(o.project ? { project: o.project } : {}) });
  const { merge_queue: entry } = await ctx.api.request<{ merge_queue: { status: string; reason: string | null } }>('DELETE', queuePath(ctx.projectId, `/${encodeURIComponent(crId)}`));
  if (o.json) return printJson(f.io, entry);
  f.io.err.write(`Took change request ${o.cr.startsWith('#') ? o.cr : `#${o.cr}`} out of the merge queue\n`);
}
