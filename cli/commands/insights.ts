import type { Argv } from 'yargs';
import type { Insights, InsightRow } from '../../contracts/insights.js';
import { INSIGHT_GROUPS } from '../../contracts/insights.js';
import type { Args } from '../command-table.js';
import { hostContext, projectContext } from '../context.js';
import type { Factory } from '../factory.js';
import { UsageError } from '../errors.js';
import { str, withHost, withJson, withProject } from '../flags.js';
import { colors, printJson, printTable } from '../output.js';
import { formatDuration, formatKey, formatMoney, formatRate, parseSince } from '../../lib/insight-format.js';

/** `svc insights`: what the project's (or an account's) agents delivered and what it cost (docs/insights.md). */
export interface InsightsOptions {
  f: Factory;
  project?: string;
  /** An account id: that account's insights instead of a project's. */
  account?: string;
  host?: string;
  json: boolean;
  groupBy?: string;
  since: string;
  asOf?: string;
}

export const builder = (y: Argv) =>
  withJson(
    withHost(
      withProject(
        y
          .option('group-by', { alias: 'g', choices: [...INSIGHT_GROUPS], requiresArg: true, describe: 'One row per agent, model, trigger, person or week' })
          .option('since', { type: 'string', default: '30d', requiresArg: true, describe: 'The window: the last N hours, days or weeks (12h, 30d, 4w)' })
          .option('as-of', { type: 'string', requiresArg: true, describe: 'Only what had been recorded by this instant (ISO 8601)' })
          .option('account', { type: 'string', requiresArg: true, describe: "An account id: every project of the account (you must be a member)" }),
      ),
    ),
  );

export const handler = (argv: Args, f: Factory) =>
  run({
    f,
    project: str(argv.project),
    account: str(argv.account),
    host: str(argv.host),
    json: !!argv.json,
    groupBy: str(argv['group-by']),
    since: str(argv.since) ?? '30d',
    asOf: str(argv['as-of']),
  });

export async function run(o: InsightsOptions): Promise<void> {
  const span = parseSince(o.since);
  if (span === null) throw new UsageError(`invalid --since "${o.since}": want a number of hours, days or weeks (12h, 30d, 4w)`);
  const asOf = o.asOf === undefined ? o.f.now() : new Date(o.asOf);
  if (Number.isNaN(asOf.getTime()) || (o.asOf !== undefined && !/^\d{4}-\d\d-\d\dT/.test(o.asOf))) throw new UsageError(`invalid --as-of "${o.asOf}": want an ISO 8601 instant (2026-03-02T09:00:00Z)`);
  const to = new Date(asOf.getTime() + 1);
  const q = new URLSearchParams({ from: new Date(to.getTime() - span).toISOString(), to: to.toISOString(), ...(o.asOf ? { as_of: asOf.toISOString() } : {}), ...(o.groupBy ? { group_by: o.groupBy } : {}) });
  const flags = { json: o.json, ...(o.host ? { host: o.host } : {}) };
  let report: Insights;
  if (o.account) {
    const ctx = await hostContext(o.f, flags);
    report = await ctx.api.request<Insights>('GET', `/accounts/${encodeURIComponent(o.account)}/insights?${q}`);
  } else {
    const ctx = await projectContext(o.f, { ...flags, ...(o.project ? { project: o.project } : {}) });
    report = await ctx.api.request<Insights>('GET', `/projects/${encodeURIComponent(ctx.projectId)}/insights?${q}`);
  }
  if (o.json) return printJson(o.f.io, report);
  const c = colors(o.f.io, o.f.env);
  const row = (r: InsightRow, key: string) => [
    key,
    String(r.crs_opened),
    String(r.crs_merged),
    String(r.crs_closed_unmerged),
    formatRate(r.merge_rate),
    formatDuration(r.median_seconds_to_merge),
    String(r.review_rounds),
    String(r.checks_failed_first_run),
    String(r.queue_ejections),
    String(r.sessions_without_cr),
    `${r.input_tokens}/${r.output_tokens}`,
    formatMoney(r.money) + (r.unpriced_calls ? ` (+${r.unpriced_calls} unpriced)` : ''),
    formatMoney(r.cost_per_merged_cr),
  ];
  const rows = [...report.groups.map((g) => row(g, formatKey(g.key, report.group_by))), row(report.total, 'total')];
  printTable(
    o.f.io,
    [report.group_by ?? 'scope', 'opened', 'merged', 'closed', 'merge rate', 'median to merge', 'rounds', 'first runs failed', 'ejections', 'sessions w/o CR', 'tokens in/out', 'money', 'per merged CR'],
    rows,
    c,
  );
  if (o.f.io.stdoutIsTTY) o.f.io.err.write(`${report.scope} ${report.id}, ${report.from} to ${report.to}${o.asOf ? `, as of ${report.as_of}` : ''}\n`);
}
