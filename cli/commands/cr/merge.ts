import type { Argv } from 'yargs';
import type { Args } from '../../command-table.js';
import { parseCrRef, projectContext } from '../../context.js';
import type { Factory } from '../../factory.js';
import { str } from '../../flags.js';
import { printJson, shortSha } from '../../output.js';
import { crTarget } from './shared.js';

export interface CrMergeOptions {
  f: Factory;
  cr: string;
  message?: string;
  whenGreen?: boolean;
  stack?: boolean;
  project?: string;
  host?: string;
  json: boolean;
}

export const builder = (y: Argv) =>
  crTarget(y)
    .option('message', { alias: 'm', type: 'string', requiresArg: true, describe: 'Merge commit message (default: "Merge CR #<n>: <title>")' })
    .option('when-green', { type: 'boolean', describe: 'Have the server merge once every check and required status passed on the current head (a later push cancels it)' })
    .option('stack', { type: 'boolean', describe: 'Merge the change request and every open one below it in its stack, bottom-up (see `svc cr stack`)' })
    .conflicts('stack', 'when-green');

export const handler = (argv: Args, f: Factory) =>
  run({ f, cr: String(argv.cr), message: str(argv.message), whenGreen: !!argv['when-green'], stack: !!argv.stack, project: str(argv.project), host: str(argv.host), json: !!argv.json });

/** Server-side merge; a conflict is a 409 that errors.ts turns into the file list. */
export async function run({ f, cr: ref, message, whenGreen, stack, project, host, json }: CrMergeOptions): Promise<void> {
  const crId = parseCrRef(ref);
  const ctx = await projectContext(f, { json, ...(host ? { host } : {}), ...(project ? { project } : {}) });
  if (whenGreen) {
    // Bound to the head shown to the person: the one `cr show` reads now.
    const seen = await ctx.api.getChangeRequest(ctx.projectId, crId);
    const auto = await ctx.api.mergeWhenGreen(ctx.projectId, crId, seen.head_commit_sha ?? undefined);
    if (json) return printJson(f.io, auto);
    f.io.err.write(
      auto.status === 'merged'
        ? `Merged change request #${seen.number}: its checks had passed\n`
        : `Change request #${seen.number} will be merged when its checks pass on ${shortSha(auto.head_sha)} (a new push cancels this; see \`svc cr checks ${seen.number}\`)\n`,
    );
    return;
  }
  const cr = await ctx.api.merge(ctx.projectId, crId, message, stack ? { stack: true } : {});
  if (json) return printJson(f.io, cr);
  // Head already in base: the CR is recorded merged, and the base did not move.
  const upToDate = cr.merge_commit_sha !== null && cr.merge_commit_sha === cr.base_commit_sha;
  const how = upToDate ? `already up to date, ${cr.base_ref} unchanged at` : cr.merge_commit_sha && cr.merge_commit_sha === cr.head_commit_sha ? 'fast-forward' : 'merge commit';
  f.io.err.write(`Merged ${stack ? 'the stack up to ' : ''}change request #${cr.number} into ${cr.base_ref} (${how} ${shortSha(cr.merge_commit_sha)})\n`);
}
