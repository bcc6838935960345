import type { Argv } from 'yargs';
import type { Args } from '../../command-table.js';
import type { Factory } from '../../factory.js';
import { printJson } from '../../output.js';
import { reviewApi, type Comment } from '../../review-api.js';
import { crTarget, crTargetOptions, openCrTarget, type CrTargetOptions } from './shared.js';

export type CrCommentsOptions = CrTargetOptions;

export const builder = (y: Argv) => crTarget(y);

export const handler = (argv: Args, f: Factory) => run(crTargetOptions(argv, f));

/** One comment as text: where, who, state, then the body indented (`svc cr comments`, `svc cr show`). */
export function renderComment(c: Comment): string {
  const where = c.path ? `${c.path}:${c.line}${c.side === 'LEFT' ? ' (old)' : ''}` : 'general';
  const who = c.author.kind === 'agent' ? `agent of session ${c.author.session_id ?? '?'}` : `user ${c.author.user_id.slice(0, 8)}`;
  const state = c.resolved ? 'resolved' : 'open';
  const round = c.answers_round ? ` · answers round ${c.answers_round}` : '';
  return `[${state}] ${where} · ${who} · ${c.created_at} · id ${c.comment_id}${round}\n${c.body.replace(/^/gm, '    ')}\n`;
}

export function renderComments(comments: Comment[]): string {
  if (comments.length === 0) return 'No comments.\n';
  const open = comments.filter((c) => !c.resolved).length;
  return `${comments.length} comment${comments.length === 1 ? '' : 's'}, ${open} unresolved\n\n` + comments.map(renderComment).join('\n');
}

export async function run(o: CrCommentsOptions): Promise<void> {
  const { f, json } = o;
  const { crId, ctx } = await openCrTarget(o);
  const comments = await reviewApi(ctx.api).comments(ctx.projectId, crId);
  if (json) return printJson(f.io, comments);
  f.io.out.write(renderComments(comments));
}
