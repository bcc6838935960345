import type { Argv } from 'yargs';
import type { CRStatus } from '../../api-client.js';
import type { Args } from '../../command-table.js';
import { projectContext } from '../../context.js';
import type { Factory } from '../../factory.js';
import { str, withHost, withJson, withProject } from '../../flags.js';
import { colors, formatTime, printJson, printTable, type Colors } from '../../output.js';

export interface CrLsOptions {
  f: Factory;
  status: CRStatus | 'all';
  project?: string;
  host?: string;
  json: boolean;
  /** Most CRs to list (pages are followed up to it); like `gh pr list --limit`. */
  limit?: number;
}

export const builder = (y: Argv) =>
  withJson(
    withHost(
      withProject(
        y
          .option('status', { choices: ['open', 'merged', 'closed', 'all'], default: 'open', requiresArg: true, describe: 'Which change requests' })
          .option('limit', { alias: 'L', type: 'number', default: 30, requiresArg: true, describe: 'Maximum number of change requests to list' })
          .check((a) => {
            const l = a.limit as number;
            if (!Number.isInteger(l) || l < 1) throw new Error('--limit must be a positive integer');
            return true;
          }),
      ),
    ),
  );

export const handler = (argv: Args, f: Factory) =>
  run({ f, status: argv.status as CrLsOptions['status'], project: str(argv.project), host: str(argv.host), json: !!argv.json, limit: Number(argv.limit ?? 30) });

export const statusColor = (c: Colors, s: string) => (s === 'open' ? c.green(s) : s === 'merged' ? c.magenta(s) : c.red(s));

export async function run({ f, status, project, host, json, limit = 30 }: CrLsOptions): Promise<void> {
  const ctx = await projectContext(f, { json, ...(host ? { host } : {}), ...(project ? { project } : {}) });
  const crs = await ctx.api.listChangeRequests(ctx.projectId, status, limit);
  if (json) return printJson(f.io, crs);
  if (crs.length === 0) {
    f.io.err.write(`No ${status === 'all' ? '' : `${status} `}change requests.\n`);
    return;
  }
  const c = colors(f.io, f.env);
  const tty = f.io.stdoutIsTTY;
  // Piped: number, title, head, base, status, created (ISO), tab-separated.
  printTable(
    f.io,
    ['#', 'title', 'branch', 'status', 'created'],
    crs.map((cr) =>
      tty
        ? [c.green(`#${cr.number}`), cr.title, c.cyan(`${cr.head_ref} → ${cr.base_ref}`), statusColor(c, cr.status), formatTime(f.io, cr.created_at, f.now())]
        : [String(cr.number), cr.title, cr.head_ref, cr.base_ref, cr.status, cr.created_at],
    ),
    c,
  );
}
