import type { Argv } from 'yargs';
import type { CreateCRInput } from '../../api-client.js';
import type { Args } from '../../command-table.js';
import { projectContext } from '../../context.js';
import { ApiError, CliError, UsageError } from '../../errors.js';
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
  allowEmpty?: boolean;
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
          .option('session', { type: 'string', requiresArg: true, describe: 'Originating session (default: $SVC_SESSION_ID)' })
          .option('allow-empty', { type: 'boolean', default: false, describe: 'Open it even when the head adds nothing to the base' }),
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
    allowEmpty: !!argv['allow-empty'],
    project: str(argv.project),
    host: str(argv.host),
    json: !!argv.json,
  });

/** Inside a sandbox every default comes from the injected environment; see the spec. */
export async function resolveHead(f: Factory, head: string | undefined): Promise<string | undefined> {
  return head || f.env.SVC_BRANCH_NAME || f.env.SVC_HEAD_REF || (await currentBranch(f.cwd));
}

/**
 * A head whose every commit is already in the base would open a CR that merges nothing
 * (and "merges" at once): refused unless `--allow-empty`, like GitHub's "nothing to
 * compare". A branch the server cannot find is left to the open, whose error says to push it.
 */
async function refuseEmpty(api: { compare(p: string, head: string, base?: string): Promise<{ is_up_to_date: boolean; base_ref: string; head_ref: string }> }, project: string, head: string, base: string | undefined) {
  let cmp;
  try {
    cmp = await api.compare(project, head, base);
  } catch (err) {
    if (err instanceof ApiError && err.status === 404) return;
    throw err;
  }
  // head == base is the open's own error ("must differ"), clearer than "adds nothing".
  if (cmp.is_up_to_date && cmp.head_ref !== cmp.base_ref) {
    throw new CliError(
      `'${head}' adds nothing to '${cmp.base_ref}': every commit on it is already there`,
      'commit and push your changes first, or pass --allow-empty',
    );
  }
}

export async function run(opts: CrOpenOptions): Promise<void> {
  const { f } = opts;
  if (!opts.title.trim()) throw new UsageError('--title must not be empty');
  const ctx = await projectContext(f, { json: opts.json, ...(opts.host ? { host: opts.host } : {}), ...(opts.project ? { project: opts.project } : {}) });
  const head = await resolveHead(f, opts.head);
  if (!head) throw new CliError('no head branch', 'pass --head <branch> (inside a session, SVC_BRANCH_NAME is used)');
  if (!opts.allowEmpty) await refuseEmpty(ctx.api, ctx.projectId, head, opts.base);
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
