import { Router } from 'express';
import { z } from 'zod';
import type { InsightRow } from '../../contracts/insights.js';
import type { InsightsReport } from '../../services/insights/service.js';
import { formatDuration, formatKey, formatMoney, formatRate } from '../../lib/insight-format.js';
import type { ApiDeps } from '../deps.js';
import { callerOf, csrfOf, projectOf, userOf } from './context.js';
import { barChart, columnChart, type Bar } from './charts.js';
import { html, type Html } from './html.js';
import { page } from './layout.js';
import { crumbsOf, projectNav } from './shared.js';

/**
 * A project's insights (docs/insights.md): merged CRs and cost per week, cost per merged
 * CR by model, merge rate by agent, and the numbers behind them. Every figure comes from
 * `projectInsights`, the service function the API answers with, over the same window
 * (`from`, `to`, `as_of` as the API takes them), formatted as `svc insights` prints them.
 */
const PageQuery = z.object({
  from: z.iso.datetime({ offset: true }).optional(),
  to: z.iso.datetime({ offset: true }).optional(),
  as_of: z.iso.datetime({ offset: true }).optional(),
});

const METRICS: Array<[keyof InsightRow, string, (r: InsightRow) => string]> = [
  ['crs_opened', 'opened', (r) => String(r.crs_opened)],
  ['crs_merged', 'merged', (r) => String(r.crs_merged)],
  ['crs_closed_unmerged', 'closed unmerged', (r) => String(r.crs_closed_unmerged)],
  ['merge_rate', 'merge rate', (r) => formatRate(r.merge_rate)],
  ['median_seconds_to_merge', 'median time to merge', (r) => formatDuration(r.median_seconds_to_merge)],
  ['review_rounds', 'review rounds', (r) => String(r.review_rounds)],
  ['checks_failed_first_run', 'checks failed on first run', (r) => String(r.checks_failed_first_run)],
  ['queue_ejections', 'queue ejections', (r) => String(r.queue_ejections)],
  ['sessions_without_cr', 'sessions ended without a CR', (r) => String(r.sessions_without_cr)],
  ['input_tokens', 'tokens in / out', (r) => `${r.input_tokens}/${r.output_tokens}`],
  ['money', 'money', (r) => formatMoney(r.money) + (r.unpriced_calls ? ` (+${r.unpriced_calls} unpriced)` : '')],
  ['cost_per_merged_cr', 'cost per merged CR', (r) => formatMoney(r.cost_per_merged_cr)],
];

export function insightsPage(deps: ApiDeps): Router {
  const r = Router();
  r.get('/projects/:projectId/insights', async (req, res) => {
    const q = PageQuery.parse(req.query);
    const project = await projectOf(deps, req, res);
    // One instant for the three reads, so they answer the same window.
    const asOf = q.as_of ?? new Date().toISOString();
    const ask = (group_by?: 'week' | 'model' | 'agent') => deps.services.insights.project(callerOf(res), project.project_id, { ...q, as_of: asOf, ...(group_by ? { group_by } : {}) });
    const [weeks, models, agents] = [await ask('week'), await ask('model'), await ask('agent')];
    res.type('html').set('Cache-Control', 'no-store').send(page({
      title: `Insights · ${project.name}`, user: userOf(res), csrf: csrfOf(res),
      crumbs: crumbsOf(project, { href: `/projects/${project.project_id}/insights`, label: 'Insights' }),
      body: body(project.project_id, weeks, models, agents, !!q.as_of),
    }));
  });
  return r;
}

/** The currency of the charts: the one with the most money in the window (others are in the tables). */
const chartCurrency = (r: InsightsReport) => [...r.total.money].sort((a, b) => b.amount - a.amount)[0]?.currency ?? null;
const amountIn = (m: { currency: string; amount: number }[], cur: string | null) => m.find((x) => x.currency === cur)?.amount ?? 0;

function body(projectId: string, weeks: InsightsReport, models: InsightsReport, agents: InsightsReport, asOf: boolean): Html {
  const cur = chartCurrency(weeks);
  const base = `/projects/${projectId}/insights`;
  const windowLink = (days: number) => {
    const to = weeks.to;
    return html`<a href="${base}?${String(new URLSearchParams({ from: new Date(to.getTime() - days * 86_400_000).toISOString(), to: to.toISOString() }))}">${days} days</a>`;
  };
  const merged: Bar[] = weeks.groups.map((g) => ({ label: g.key ?? '', value: g.crs_merged, text: String(g.crs_merged) }));
  const cost: Bar[] = cur ? weeks.groups.map((g) => ({ label: g.key ?? '', value: amountIn(g.money, cur), text: formatMoney(g.money.filter((m) => m.currency === cur)) })) : [];
  const perCr: Bar[] = cur ? models.groups.filter((g) => g.crs_merged > 0).map((g) => ({ label: formatKey(g.key, 'model'), value: amountIn(g.cost_per_merged_cr, cur), text: formatMoney(g.cost_per_merged_cr.filter((m) => m.currency === cur)) })) : [];
  const rates: Bar[] = agents.groups.filter((g) => g.merge_rate !== null).map((g) => ({ label: formatKey(g.key, 'agent'), value: g.merge_rate!, text: formatRate(g.merge_rate) }));
  return html`<h1>Insights</h1>
${projectNav(projectId, 'insights')}
<p class="muted" id="window">From <time datetime="${weeks.from.toISOString()}">${weeks.from.toISOString()}</time> to <time datetime="${weeks.to.toISOString()}">${weeks.to.toISOString()}</time>${asOf ? html`, as recorded by <time datetime="${weeks.asOf.toISOString()}">${weeks.asOf.toISOString()}</time>` : ''}. Show the last ${windowLink(7)}, ${windowLink(30)}, ${windowLink(90)}.</p>
<dl class="stats" id="totals">${METRICS.map(([k, label, f]) => html`<div class="stat" data-metric="${k}"><dt>${label}</dt><dd>${f(weeks.total)}</dd></div>`)}</dl>
<div class="charts">
${columnChart({ id: 'chart-merged', title: 'Merged change requests per week', bars: merged, color: '#8250df' })}
${cur ? columnChart({ id: 'chart-cost', title: `Cost per week (${cur})`, bars: cost }) : html`<figure class="chart" id="chart-cost"><figcaption>Cost per week</figcaption><p class="muted">No priced model calls in this window.</p></figure>`}
${barChart({ id: 'chart-cost-per-cr', title: `Cost per merged change request by model${cur ? ` (${cur})` : ''}`, bars: perCr })}
${barChart({ id: 'chart-merge-rate', title: 'Merge rate by agent (merged of merged and closed)', bars: rates, max: 1, color: '#1a7f37' })}
</div>
${table('by-model', 'By model', models)}
${table('by-agent', 'By agent', agents)}
<p class="hint">The same numbers as <code>svc insights</code> and <code>GET /v1/projects/:id/insights</code>: CRs are dated by their events, money by each model call; a session that named no model counts under "(none)".</p>`;
}

function table(id: string, title: string, r: InsightsReport): Html {
  if (r.groups.length === 0) return html`<h2>${title}</h2><p class="muted">Nothing in this window.</p>`;
  return html`<h2>${title}</h2><div class="scroll"><table class="list" id="${id}"><thead><tr><th scope="col">${r.groupBy ?? ''}</th>${METRICS.map(([, label]) => html`<th scope="col">${label}</th>`)}</tr></thead>
<tbody>${r.groups.map((g) => html`<tr data-key="${g.key ?? ''}"><th scope="row">${formatKey(g.key, r.groupBy)}</th>${METRICS.map(([k, label, f]) => html`<td data-label="${label}" data-metric="${k}">${f(g)}</td>`)}</tr>`)}</tbody></table></div>`;
}
