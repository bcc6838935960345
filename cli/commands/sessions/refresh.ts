import type { Argv } from 'yargs';
import type { Args } from '../../command-table.js';
import type { Factory } from '../../factory.js';
import { str } from '../../flags.js';
import { printJson } from '../../output.js';
import { sessionsApi } from '../../sessions-api.js';
import { ctxOf, sessionArg, withTarget } from './shared.js';

export const builder = (y: Argv) => withTarget(sessionArg(y));

export const handler = (argv: Args, f: Factory) => run(f, { id: String(argv.id), project: str(argv.project), host: str(argv.host), json: !!argv.json });

/** `POST …/refresh`: the sandbox re-pulls the session branch and restarts its agent runtime in place (same sandbox). */
export async function run(f: Factory, o: { id: string; project?: string; host?: string; json: boolean }): Promise<void> {
  const ctx = await ctxOf(f, o);
  const sapi = sessionsApi(ctx.api);
  const s = (await sapi.refresh(ctx.projectId, o.id)) ?? (await sapi.get(ctx.projectId, o.id));
  if (o.json) return printJson(f.io, s);
  f.io.err.write(`Refreshed session ${o.id}: branch re-pulled, agent restarted\n`);
}
