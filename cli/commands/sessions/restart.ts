import type { Argv } from 'yargs';
import type { Args } from '../../command-table.js';
import type { Factory } from '../../factory.js';
import { str } from '../../flags.js';
import { printJson } from '../../output.js';
import { sessionsApi } from '../../sessions-api.js';
import { ctxOf, sessionArg, waitRunning, withTarget } from './shared.js';

export const builder = (y: Argv) => withTarget(sessionArg(y)
    .option('wait', { type: 'boolean', default: true, describe: 'Wait until it runs again (--no-wait: do not)' })
    .option('fresh', { type: 'boolean', default: false, describe: 'A fresh clone of the branch only: discard the saved workspace and conversation' }));

export const handler = (argv: Args, f: Factory) =>
  run(f, { id: String(argv.id), wait: argv.wait !== false, fresh: argv.fresh === true, project: str(argv.project), host: str(argv.host), json: !!argv.json });

/** Re-provisions the session in place (fresh sandbox, fresh project token). */
export async function run(f: Factory, o: { id: string; wait: boolean; fresh?: boolean; project?: string; host?: string; json: boolean }): Promise<void> {
  const ctx = await ctxOf(f, o);
  let s = await sessionsApi(ctx.api).restart(ctx.projectId, o.id, o.fresh === true);
  if (o.wait) s = await waitRunning(f, ctx, o.id, { quiet: o.json });
  else s ??= await sessionsApi(ctx.api).get(ctx.projectId, o.id);
  if (o.json) return printJson(f.io, s);
  f.io.err.write(`Restarted session ${o.id} (${s!.status})\n`);
}
