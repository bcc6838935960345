import type { Argv } from 'yargs';
import type { Args } from '../../command-table.js';
import { parseCrRef, projectContext } from '../../context.js';
import { UsageError } from '../../errors.js';
import type { Factory } from '../../factory.js';
import { str } from '../../flags.js';
import { printJson } from '../../output.js';
import { reviewApi } from '../../review-api.js';
import { crTarget } from './shared.js';

export interface CrCommentOptions {
  f: Factory;
  cr: string;
  body: string;
  path?: string | undefined;
  line?: number | undefined;
  side?: 'LEFT' | 'RIGHT' | undefined;
  commit?: string | undefined;
  project?: string;
  host?: string;
  json: boolean;
}

export const builder = (y: Argv) =>
  crTarget(y)
    .option('body', { alias: 'b', type: 'string', requiresArg: true, demandOption: true, describe: 'The comment (Markdown as plain text)' })
    .option('path', { type: 'string', requiresArg: true, describe: 'File of the diff to comment on (with --line)' })
    .option('line', { type: 'number', requiresArg: true, describe: 'Line of that file in the diff (with --path)' })
    .option('side', { type: 'string', choices: ['LEFT', 'RIGHT'], requiresArg: true, describe: 'RIGHT: the new line (default); LEFT: the old one' })
    .option('commit', { type: 'string', requiresArg: true, describe: 'Commit of the head the line refers to (default: the head now)' });

export const handler = (argv: Args, f: Factory) =>
  run({
    f,
    cr: String(argv.cr),
    body: String(argv.body ?? ''),
    path: str(argv.path),
    line: argv.line === undefined ? undefined : Number(argv.line),
    side: str(argv.side) as CrCommentOptions['side'],
    commit: str(argv.commit),
    project: str(argv.project),
    host: str(argv.host),
    json: !!argv.json,
  });

/** A general comment, or one on a line of the diff (`--path` and `--line`). */
export async function run(o: CrCommentOptions): Promise<void> {
  const crId = parseCrRef(o.cr);
  if ((o.path === undefined) !== (o.line === undefined)) throw new UsageError('--path and --line go together');
  if (o.line !== undefined && (!Number.isInteger(o.line) || o.line < 1)) throw new UsageError('--line must be a positive whole number');
  const ctx = await projectContext(o.f, { json: o.json, ...(o.host ? { host: o.host } : {}), ...(o.project ? { project: o.project } : {}) });
  const c = await reviewApi(ctx.api).comment(ctx.projectId, crId, {
    body: o.body,
    ...(o.path !== undefined ? { path: o.path, line: o.line! } : {}),
    ...(o.side ? { side: o.side } : {}),
    ...(o.commit ? { commit_sha: o.commit } : {}),
  });
  if (o.json) return printJson(o.f.io, c);
  o.f.io.err.write(`Commented on change request ${o.cr.replace(/^#?/, '#')}${c.path ? ` at ${c.path}:${c.line}` : ''} (${c.comment_id})\n`);
}
