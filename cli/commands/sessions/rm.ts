import type { Argv } from 'yargs';
import type { Args } from '../../command-table.js';
import { CancelError, UsageError } from '../../errors.js';
import type { Factory } from '../../factory.js';
import { str, withHost, withProject } from '../../flags.js';
import { sessionsApi } from '../../sessions-api.js';
import { ctxOf, sessionArg } from './shared.js';

export const builder = (y: Argv) => withHost(withProject(sessionArg(y).option('yes', { alias: 'y', type: 'boolean', describe: 'Do not ask for confirmation' })));

export const handler = (argv: Args, f: Factory) => run(f, { id: String(argv.id), yes: !!argv.yes, project: str(argv.project), host: str(argv.host) });

/** Stops and deletes the session (its branch stays). Asks first on a terminal. */
export async function run(f: Factory, o: { id: string; yes: boolean; project?: string; host?: string }): Promise<void> {
  const ctx = await ctxOf(f, o);
  if (!o.yes) {
    if (!f.io.stdinIsTTY || !f.io.stdoutIsTTY) throw new UsageError('--yes required to remove a session when not running interactively');
    if (!(await f.prompter.confirm(`Stop and delete session ${o.id}? Its branch stays.`))) throw new CancelError('session not removed');
  }
  await sessionsApi(ctx.api).remove(ctx.projectId, o.id);
  f.io.err.write(`Removed session ${o.id}\n`);
}
