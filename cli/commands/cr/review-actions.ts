/** `svc cr send-to-agent`, `svc cr reviewed` and `svc cr resolve`: a person's side of a review. */
import type { Argv } from 'yargs';
import type { Args } from '../../command-table.js';
import { parseCrRef, projectContext } from '../../context.js';
import type { Factory } from '../../factory.js';
import { str } from '../../flags.js';
import { printJson, shortSha } from '../../output.js';
import { reviewApi } from '../../review-api.js';
import { crTarget } from './shared.js';

interface Target {
  f: Factory;
  cr: string;
  project?: string | undefined;
  host?: string | undefined;
  json: boolean;
}

const targetOf = (argv: Args, f: Factory): Target => ({ f, cr: String(argv.cr), project: str(argv.project), host: str(argv.host), json: !!argv.json });
const contextOf = (t: Target) => projectContext(t.f, { json: t.json, ...(t.host ? { host: t.host } : {}), ...(t.project ? { project: t.project } : {}) });

export const sendBuilder = (y: Argv) => crTarget(y);
export async function send(t: Target): Promise<void> {
  const crId = parseCrRef(t.cr);
  const ctx = await contextOf(t);
  const r = await reviewApi(ctx.api).sendToAgent(ctx.projectId, crId);
  if (t.json) return printJson(t.f.io, r);
  const how = r.delivery === 'prompted' ? 'prompted' : r.delivery === 'restarted' ? 'restarted; the prompt follows once its agent is ready' : 'starting; the prompt follows once its agent is ready';
  t.f.io.err.write(`Sent ${r.items.length} item${r.items.length === 1 ? '' : 's'} to session ${r.session_id} (round ${r.round}, ${how})\n`);
}
export const sendHandler = (argv: Args, f: Factory) => send(targetOf(argv, f));

export const reviewedBuilder = (y: Argv) => crTarget(y);
export async function reviewed(t: Target): Promise<void> {
  const crId = parseCrRef(t.cr);
  const ctx = await contextOf(t);
  const r = await reviewApi(ctx.api).markReviewed(ctx.projectId, crId);
  if (t.json) return printJson(t.f.io, r);
  t.f.io.err.write(`Marked change request ${t.cr.replace(/^#?/, '#')} reviewed at ${shortSha(r.head_sha)}\n`);
}
export const reviewedHandler = (argv: Args, f: Factory) => reviewed(targetOf(argv, f));

export const resolveBuilder = (y: Argv) =>
  crTarget(y)
    .positional('comment', { type: 'string', describe: 'Comment id (svc cr comments shows them)' })
    .option('unresolve', { type: 'boolean', describe: 'Open the comment again' });
export async function resolve(t: Target & { comment: string; unresolve: boolean }): Promise<void> {
  const crId = parseCrRef(t.cr);
  const ctx = await contextOf(t);
  const c = await reviewApi(ctx.api).resolve(ctx.projectId, crId, t.comment, !t.unresolve);
  if (t.json) return printJson(t.f.io, c);
  t.f.io.err.write(`${c.resolved ? 'Resolved' : 'Unresolved'} comment ${c.comment_id}\n`);
}
export const resolveHandler = (argv: Args, f: Factory) => resolve({ ...targetOf(argv, f), comment: String(argv.comment), unresolve: !!argv.unresolve });
