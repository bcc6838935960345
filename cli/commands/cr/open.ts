import type { Argv } from 'yargs';
import type { CreateCRInput } from '../../api-client.js';
import type { Args } from '../../command-table.js';
import { projectContext } from '../../context.js';
import { CliError, UsageError } from '../../errors.js';
import type { Factory } from '../../factory.js';
import { str, withHost, withJson, withProject } from '../../flags.js';
import { currentBranch } from '../../git.js';
import { printJson } from '../../output.js';
import { crUrl } from './shared.js';

export interface CrOpenOptions {
  f: Factory;
  title: string;
  description?: string;
  head?: string;
  base?: string;
  session?: string;
  project?: string;
  host?: string;
  json: boolean;
}

export const builder = (y: Argv) =>
  withJson(
    withHost(
      withProject(
        y
          .option('title', { alias: 't', type: 'string', demandOption: true, requiresArg: true, describe: 'Title (required)' })
          .option('description', { alias: ['body', 'b'], type: 'string', requiresArg: true, describe: 'Description' })
          .option('head', { alias: 'from', type: 'string', requiresArg: true, describe: 'Branch to merge from (default: $SVC_BRANCH_NAME, $SVC_HEAD_REF, the current git branch)' })
          .option('base', { alias: 'into', type: 'string', requiresArg: true, describe: "Branch to merge into (default: the project's default branch)" })
          .option('session', { type: 'string', requiresArg: true, describe: 'Originating session (default: $SVC_SESSION_ID)' }),
      ),
    ),
  );

export const handler = (argv: Args, f: Factory) =>
  run({
    f,
    title: String(argv.title),
    description: str(argv.description),
    head: str(argv.head),
    base: str(argv.base),
    session: str(argv.session),
    project: str(argv.project),
    host: str(argv.host),
    json: !!argv.json,
  });

/** Inside a sandbox every default comes from the injected environment; see the spec. */
export async function resolveHead(f: Factory, head: string | undefined): Promise<string | undefined> {
  return head || f.env.SVC_BRANCH_NAME || f.env.SVC_HEAD_REF || (await currentBranch(f.cwd));
}

export async function run(opts: CrOpenOptions): Promise<void> {
  const { f } = opts;
  if (!opts.title.trim()) throw new UsageError('--title must not be empty');
  const ctx = await projectContext(f, { json: opts.json, ...(opts.host ? { host: opts.host } : {}), ...(opts.project ? { project: opts.project } : {}) });
  const head = await resolveHead(f, opts.head);
  if (!head) throw new CliError('no head branch', 'pass --head <branch> (inside a session, SVC_BRANCH_NAME is used)');
  const input: CreateCRInput = { title: opts.title, head_ref: head };
  if (opts.description !== undefined) input.description = opts.description;
  if (opts.base) input.base_ref = opts.base;
  const session = opts.session || f.env.SVC_SESSION_ID;
  if (session) input.session_id = session;
  const cr = await ctx.api.createChangeRequest(ctx.projectId, input);
  if (opts.json) return printJson(f.io, cr);
  f.io.err.write(`Opened change request #${cr.number}: ${cr.head_ref} → ${cr.base_ref}\n`);
  f.io.out.write(`#${cr.number}\n${crUrl(f, ctx.host.url, cr)}\n`);
}
