import type { Argv } from 'yargs';
import type { CrChecks } from '../../api-client.js';
import type { Args } from '../../command-table.js';
import type { Factory } from '../../factory.js';
import { colors, printJson, shortSha, type Colors } from '../../output.js';
import { crTarget, crTargetOptions, openCrTarget, type CrTargetOptions } from './shared.js';

export type CrChecksOptions = CrTargetOptions;

export const builder = (y: Argv) => crTarget(y);

export const handler = (argv: Args, f: Factory) => run(crTargetOptions(argv, f));

/** `svc cr checks <n>`: each check's latest run (on which pair), the head's statuses, merge when green. */
export async function run(o: CrChecksOptions): Promise<void> {
  const { f, json } = o;
  const { crId, ctx } = await openCrTarget(o);
  const checks = await ctx.api.getChecks(ctx.projectId, crId);
  if (json) return printJson(f.io, checks);
  const c = colors(f.io, f.env);
  const none = checks.checks.length === 0 && checks.statuses.length === 0 && !checks.auto_merge;
  // Nothing to list still says so: on stdout on a terminal, on stderr when piped (stdout stays empty for scripts).
  if (none) return void (f.io.stdoutIsTTY ? f.io.out : f.io.err).write('no checks: none are configured ([[checks]] in svc.toml) and no commit status was posted\n');
  f.io.out.write(f.io.stdoutIsTTY ? renderTTY(c, checks) : renderPlain(checks));
}

const MARK: Record<string, string> = { passed: '✓', success: '✓', failed: '✗', failure: '✗', errored: '!', error: '!', cancelled: '-', queued: '·', running: '…', pending: '·' };

const paint = (c: Colors, state: string, s: string) =>
  ['passed', 'success'].includes(state) ? c.green(s) : ['failed', 'failure', 'errored', 'error'].includes(state) ? c.red(s) : c.yellow(s);

/** One line for `cr show`: "checks: 2 passed, 1 failed · merge when green: pending". */
export function checksSummary(ch: CrChecks): string | null {
  if (ch.checks.length === 0 && ch.statuses.length === 0 && !ch.auto_merge) return null;
  const counts = new Map<string, number>();
  for (const x of [...ch.checks.map((r) => r.status), ...ch.statuses.map((s) => s.state)]) counts.set(x, (counts.get(x) ?? 0) + 1);
  const parts = [...counts].map(([k, n]) => `${n} ${k}`);
  const auto = ch.auto_merge ? ` · merge when green: ${ch.auto_merge.status}${ch.auto_merge.reason ? ` (${ch.auto_merge.reason})` : ''}` : '';
  return `${parts.join(', ') || 'none'}${auto}`;
}

function renderTTY(c: Colors, ch: CrChecks): string {
  const lines: string[] = [];
  if (ch.checks.length === 0) lines.push(c.dim('No checks.'));
  for (const r of ch.checks) {
    const why = r.reason ? ` (${r.reason})` : r.exit_code !== null && r.exit_code !== 0 ? ` (exit ${r.exit_code})` : '';
    lines.push(`${paint(c, r.status, MARK[r.status] ?? '?')} ${r.name} ${paint(c, r.status, r.status)}${why} ${c.dim(`on ${shortSha(r.base_sha)}+${shortSha(r.head_sha)} · log ${r.log_url}`)}`);
  }
  for (const s of ch.statuses) {
    lines.push(`${paint(c, s.state, MARK[s.state] ?? '?')} ${s.context} ${paint(c, s.state, s.state)}${s.required ? c.dim(' (required)') : ''}${s.description ? ` ${s.description}` : ''}${s.target_url ? c.dim(` ${s.target_url}`) : ''}`);
  }
  if (ch.auto_merge) {
    const a = ch.auto_merge;
    lines.push(`merge when green: ${a.status} on ${shortSha(a.head_sha)}${a.reason ? ` (${a.reason})` : ''}`);
  }
  return lines.join('\n') + '\n';
}

/** Piped: one tab-separated line per check and status, then merge-when-green. */
function renderPlain(ch: CrChecks): string {
  const rows = [
    ...ch.checks.map((r) => ['check', r.name, r.status, r.base_sha, r.head_sha, r.reason ?? '', r.log_url]),
    ...ch.statuses.map((s) => ['status', s.context, s.state, s.required ? 'required' : '', s.sha, s.description ?? '', s.target_url ?? '']),
    ...(ch.auto_merge ? [['auto_merge', ch.auto_merge.status, ch.auto_merge.head_sha, ch.auto_merge.reason ?? '']] : []),
  ];
  return rows.map((r) => r.join('\t')).join('\n') + (rows.length ? '\n' : '');
}
