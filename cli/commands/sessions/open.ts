import type { Argv } from 'yargs';
import type { Args } from '../../command-table.js';
import type { Factory } from '../../factory.js';
import { str, withHost, withProject } from '../../flags.js';
import { openOrPrint } from '../../browser.js';
import { sessionsApi } from '../../sessions-api.js';
import { ctxOf, sessionArg, sessionUrl } from './shared.js';

export const builder = (y: Argv) => withHost(withProject(sessionArg(y)));

export const handler = (argv: Args, f: Factory) => run(f, { id: String(argv.id), project: str(argv.project), host: str(argv.host) });

/** The session's dashboard page: opened on a terminal, printed otherwise. */
export async function run(f: Factory, o: { id: string; project?: string; host?: string }): Promise<void> {
  const ctx = await ctxOf(f, o);
  const s = await sessionsApi(ctx.api).get(ctx.projectId, o.id);
  await openOrPrint(f, sessionUrl(f, ctx, s));
}
