import type { Argv } from 'yargs';
import type { Args } from '../../command-table.js';
import { UsageError } from '../../errors.js';
import type { Factory } from '../../factory.js';
import { str, withHost, withProject } from '../../flags.js';
import { sessionsApi } from '../../sessions-api.js';
import { openOrPrint } from '../../browser.js';
import { ctxOf, sessionArg } from './shared.js';

export const builder = (y: Argv) => withHost(withProject(sessionArg(y).positional('port', { type: 'string', describe: 'Port inside the sandbox (default 3000)' })));

export const handler = (argv: Args, f: Factory) => run(f, { id: String(argv.id), port: str(argv.port), project: str(argv.project), host: str(argv.host) });

/** The preview's own origin for a sandbox port (opening it goes through the dashboard's sign-in); opened on a terminal. */
export async function run(f: Factory, o: { id: string; port?: string; project?: string; host?: string }): Promise<void> {
  const port = o.port === undefined ? 3000 : Number(o.port);
  if (!/^\d{1,5}$/.test(o.port ?? '3000') || port < 1 || port > 65535) throw new UsageError(`invalid port "${o.port}": want 1-65535`);
  const ctx = await ctxOf(f, o);
  const s = await sessionsApi(ctx.api).get(ctx.projectId, o.id);
  await openOrPrint(f, await sessionsApi(ctx.api).previewUrl(s.project_id, s.session_id, port));
}
