import type { Argv } from 'yargs';
import type { Args } from '../../command-table.js';
import { parseCrRef, projectContext } from '../../context.js';
import type { Factory } from '../../factory.js';
import { str } from '../../flags.js';
import { printJson } from '../../output.js';
import { reviewApi, type Comment } from '../../review-api.js';
import { crTarget } from './shared.js';

export interface CrCommentsOptions {
  f: Factory;
  cr: string;
  project?: string;
  host?: string;
  json: boolean;
}

export const builder = (y: Argv) => crTarget(y);

export const handler = (argv: Args, f: Factory) => run({ f, cr: String(argv.cr), project: str(argv.project), host: str(argv.host), json: !!argv.json });

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

export async function run({ f, cr: ref, project, host, json }: CrCommentsOptions): Promise<void> {
  const crId = parseCrRef(ref);
  const ctx = await projectContext(f, { json, ...(host ? { host } : {}), ...(project ? { project } : {}) });
  const comments = await reviewApi(ctx.api).comments(ctx.projectId, crId);
  if (json) return printJson(f.io, comments);
  f.io.out.write(renderComments(comments));
}
