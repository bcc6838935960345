import type { Argv } from 'yargs';
import type { Args } from '../../command-table.js';
import type { Factory } from '../../factory.js';
import { str } from '../../flags.js';
import { colors, formatTime, printJson, printTable } from '../../output.js';
import { sessionsApi } from '../../sessions-api.js';
import { ctxOf, statusColor, withTarget } from './shared.js';

export const builder = (y: Argv) =>
  withTarget(y.option('status', { type: 'string', requiresArg: true, choices: ['provisioning', 'running', 'stopped', 'failed', 'all'], describe: 'Only sessions in this status' }));

export const handler = (argv: Args, f: Factory) => run(f, { status: str(argv.status), project: str(argv.project), host: str(argv.host), json: !!argv.json });

/** The project's sessions, newest first. */
export async function run(f: Factory, o: { status?: string; project?: string; host?: string; json: boolean }): Promise<void> {
  const ctx = await ctxOf(f, o);
  const list = await sessionsApi(ctx.api).list(ctx.projectId, o.status && o.status !== 'all' ? o.status : undefined);
  if (o.json) return printJson(f.io, list);
  if (list.length === 0) {
    f.io.err.write("No sessions. Start one with 'svc sessions new'.\n");
    return;
  }
  const c = colors(f.io, f.env);
  const tty = f.io.stdoutIsTTY;
  printTable(
    f.io,
    ['id', 'status', 'agent', 'base', 'created'],
    list.map((s) =>
      tty
        ? [s.session_id, statusColor(c, s.status), s.agent, s.base_ref, formatTime(f.io, s.created_at, f.now())]
        : [s.session_id, s.status, s.agent, s.base_ref, s.created_at],
    ),
    c,
  );
}
