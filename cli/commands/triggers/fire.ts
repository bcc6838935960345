import type { Args } from '../../command-table.js';
import { projectContext } from '../../context.js';
import type { Factory } from '../../factory.js';
import { str } from '../../flags.js';
import { printJson } from '../../output.js';
import { slugTarget, triggersPath } from './shared.js';

export const builder = slugTarget;
export const handler = (argv: Args, f: Factory) => run(f, { slug: String(argv.slug), project: str(argv.project), host: str(argv.host), json: !!argv.json });

/** A manual fire: a session with the trigger's prompt (a 503 says when sessions are unavailable). */
export async function run(f: Factory, o: { slug: string; project?: string; host?: string; json: boolean }): Promise<void> {
  const ctx = await projectContext(f, { json: o.json, ...(o.host ? { host: o.host } : {}), ...(o.project ? { project: o.project } : {}) });
  const { session } = await ctx.api.request<{ session: { session_id: string } }>('POST', triggersPath(ctx.projectId, o.slug, '/fire'), {});
  if (o.json) return printJson(f.io, session);
  f.io.err.write(`Fired ${o.slug}: session ${session.session_id}\n`);
  f.io.out.write(`${session.session_id}\n`);
}
