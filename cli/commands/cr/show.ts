import type { Argv } from 'yargs';
import type { ChangeRequest, CrCost, MergePreview } from '../../api-client.js';
import { moneyText, secondsText } from '../../../lib/cost-text.js';
import type { Args } from '../../command-table.js';
import { describeError } from '../../errors.js';
import type { Factory } from '../../factory.js';
import { colors, formatTime, printJson, shortSha, type Colors } from '../../output.js';
import { statusColor } from './ls.js';
import { crTarget, crUrl, crTargetOptions, openCrTarget, type CrTargetOptions } from './shared.js';
import { reviewApi } from '../../review-api.js';
import { renderComments } from './comments.js';
import { checksSummary } from './checks.js';

export type CrShowOptions = CrTargetOptions;

export const builder = (y: Argv) => crTarget(y);

export const handler = (argv: Args, f: Factory) => run(crTargetOptions(argv, f));

/** Metadata, and for an open CR its merge preview (clean / fast-forward / conflicts). */
export async function run(o: CrShowOptions): Promise<void> {
  const { f, json } = o;
  const { crId, ctx } = await openCrTarget(o);
  const cr = await ctx.api.getChangeRequest(ctx.projectId, crId);
  if (json) return printJson(f.io, cr);
  let preview: MergePreview | undefined;
  let previewError: string | undefined;
  if (cr.status === 'open') {
    try {
      preview = await ctx.api.getMergePreview(ctx.projectId, cr.cr_id);
    } catch (e) {
      previewError = describeError(e);
    }
  }
  // One line of checks (`svc cr checks` has them all); a server without checks: none.
  // What it cost (a server without the route: nothing).
  const [checks, cost] = await Promise.all([
    ctx.api.getChecks(ctx.projectId, cr.cr_id).then(checksSummary, () => null),
    ctx.api.getCost(ctx.projectId, cr.cr_id).then(costRows, () => []),
  ]);
  const c = colors(f.io, f.env);
  const url = crUrl(f, ctx.host.url, cr);
  f.io.out.write(
    f.io.stdoutIsTTY
      ? renderTTY(f, c, cr, preview, previewError) + (checks ? `checks: ${checks}\n` : '') + cost.map(([k, v]) => `${k.replace(/_/g, ' ')}: ${v}\n`).join('') + `url: ${url}\n`
      : renderPlain(cr, url, preview, previewError, checks, cost),
  );
  // The review comments follow (an older server without them: nothing).
  const comments = await reviewApi(ctx.api).comments(ctx.projectId, cr.cr_id).catch(() => []);
  if (comments.length) f.io.out.write(`\n${renderComments(comments)}`);
}

/** What the CR cost, as `key`/`value` rows: tokens and money (an agent's CR), sandbox and check time. */
export function costRows(k: CrCost): Array<[string, string]> {
  const rows: Array<[string, string]> = [];
  if (k.session_id) {
    const unpriced = k.by_model.filter((m) => !m.priced).map((m) => m.model);
    rows.push(['tokens', `${k.input_tokens} in, ${k.output_tokens} out (${k.requests} model call${k.requests === 1 ? '' : 's'})`]);
    rows.push(['cost', `${moneyText(k.money)}${k.unpriced_tokens ? ` + ${k.unpriced_tokens} unpriced tokens (${unpriced.join(', ')})` : ''}`]);
    if (k.unmetered) rows.push(['model_calls', "unmetered (the agent uses its own provider's key: its calls bypass the gateway)"]);
    rows.push(['sandbox_time', secondsText(k.sandbox_seconds)]);
  }
  if (k.session_id || k.check_runs.length) rows.push(['check_time', secondsText(k.check_seconds)]);
  return rows;
}

export function previewSummary(p: MergePreview): { label: string; detail: string } {
  if (p.is_up_to_date) return { label: 'up-to-date', detail: 'nothing to merge: the head is already in the base' };
  if (!p.can_merge) return { label: 'conflicts', detail: `conflicts in ${p.conflicts.length} file${p.conflicts.length === 1 ? '' : 's'}` };
  if (p.can_fast_forward) return { label: 'fast-forward', detail: 'clean: can be merged as a fast-forward' };
  return { label: 'clean', detail: 'clean: can be merged with a merge commit' };
}

function renderTTY(f: Factory, c: Colors, cr: ChangeRequest, p: MergePreview | undefined, previewError: string | undefined): string {
  const now = f.now();
  const lines = [
    `${c.bold(cr.title)} ${c.dim(`#${cr.number}`)}`,
    `${statusColor(c, cr.status)} · ${c.cyan(cr.head_ref)} → ${c.cyan(cr.base_ref)} · opened ${formatTime(f.io, cr.created_at, now)}`,
  ];
  if (cr.status === 'merged') lines.push(`merged ${formatTime(f.io, cr.merged_at, now)} as ${shortSha(cr.merge_commit_sha)}`);
  if (cr.status === 'closed') lines.push(`closed ${formatTime(f.io, cr.closed_at, now)}`);
  lines.push(c.dim(`head ${shortSha(cr.head_commit_sha) || '-'} · base ${shortSha(cr.base_commit_sha) || '-'} · id ${cr.cr_id}`));
  if (cr.origin_session_id) lines.push(c.dim(`session ${cr.origin_session_id}`));
  lines.push('');
  lines.push(cr.description ? cr.description.replace(/^/gm, '  ') : c.dim('  No description provided.'));
  lines.push('');
  if (p) {
    const s = previewSummary(p);
    const mark = s.label === 'conflicts' ? c.red('✗') : s.label === 'up-to-date' ? c.yellow('-') : c.green('✓');
    lines.push(`${mark} Merge preview: ${s.detail}`);
    for (const file of p.conflicts) lines.push(`    ${c.red(file)}`);
  } else if (previewError) {
    lines.push(`${c.yellow('!')} Merge preview unavailable: ${previewError}`);
  }
  return lines.join('\n') + '\n';
}

/** gh's piped shape: `key:\tvalue` lines (the URL among them), then the description, if any, between `--` lines. */
function renderPlain(cr: ChangeRequest, url: string, p: MergePreview | undefined, previewError: string | undefined, checks: string | null = null, cost: Array<[string, string]> = []): string {
  const rows: Array<[string, string | number | null]> = [
    ['number', cr.number],
    ['id', cr.cr_id],
    ['title', cr.title],
    ['status', cr.status],
    ['head', cr.head_ref],
    ['base', cr.base_ref],
    ['head_sha', cr.head_commit_sha],
    ['base_sha', cr.base_commit_sha],
    ['session', cr.origin_session_id],
    ['created', cr.created_at],
  ];
  if (cr.status === 'merged') rows.push(['merged', cr.merged_at], ['merge_commit', cr.merge_commit_sha]);
  if (cr.status === 'closed') rows.push(['closed', cr.closed_at]);
  if (p) {
    rows.push(['preview', previewSummary(p).label]);
    if (p.conflicts.length) rows.push(['conflicts', p.conflicts.join(', ')]);
  } else if (previewError) {
    rows.push(['preview', `unavailable: ${previewError}`]);
  }
  if (checks) rows.push(['checks', checks]);
  rows.push(...cost);
  rows.push(['url', url]);
  const head = rows.map(([k, v]) => `${k}:\t${v ?? ''}`).join('\n');
  // No description: no empty `--` block (two bare lines that said nothing).
  if (!cr.description) return `${head}\n`;
  return `${head}\n--\n${cr.description}${cr.description.endsWith('\n') ? '' : '\n'}--\n`;
}
