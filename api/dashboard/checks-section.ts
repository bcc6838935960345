import { Router, type Request, type Response } from 'express';
import { z } from 'zod';
import type { CrChecks } from '../../contracts/checks.js';
import type { ChangeRequest } from '../../domain/change-request/index.js';
import { isDomainError } from '../../domain/errors.js';
import type { ProjectRecord } from '../../domain/project.js';
import { LOG_HEADERS } from '../../services/checks/log-store.js';
import type { ApiDeps } from '../deps.js';
import { callerOf, projectOf, requireCsrf } from './context.js';
import { html, shortSha, timeAgo, type Html } from './html.js';
import { respond } from './shared.js';

/**
 * The CR page's checks: each check's latest run on its pair with a link to its
 * log, the head's commit statuses (required ones marked), and merge when green (its state,
 * or the button that asks for it on the head the page shows). The section is one of the
 * page's `data-live` parts: every event of the CR's stream (a run starting, passing ...)
 * re-renders it in place.
 */
export async function checksOf(deps: ApiDeps, project: ProjectRecord, cr: ChangeRequest, events: { type: string; data: unknown }[]): Promise<CrChecks | null> {
  return deps.services.checks.viewFrom(project, cr, events).catch(() => null);
}

const badge = (state: string) => html`<span class="badge s-${state}" data-check-status="${state}">${state}</span>`;

export function checksSection(ch: CrChecks | null, cr: ChangeRequest, headSha: string | null, csrf: string, base: string): Html {
  if (!ch) return html`<section aria-labelledby="checks-h" data-live="cr-checks"><h2 id="checks-h">Checks</h2><p class="warn">Checks cannot be shown right now.</p></section>`;
  const runs = ch.checks.map(
    (r) => html`<li data-check="${r.name}">${badge(r.status)} <strong>${r.name}</strong>
${r.reason ? html`<span class="muted">(${r.reason}${r.exit_code !== null && r.exit_code !== 0 ? html`, exit ${r.exit_code}` : ''})</span>` : ''}
<span class="muted">on <code>${shortSha(r.base_sha)}</code>+<code>${shortSha(r.head_sha)}</code>${r.finished_at ? html` · ${timeAgo(r.finished_at)}` : ''}</span>
${r.finished_at ? html` · <a href="${base}/checks/${r.run_id}/log" rel="noopener">log</a>` : ''}</li>`,
  );
  const statuses = ch.statuses.map(
    (s) => html`<li data-status-context="${s.context}">${badge(s.state)} <strong>${s.context}</strong>${s.required ? html` <span class="muted">(required)</span>` : ''}
${s.description ? html` ${s.description}` : ''}${s.target_url ? html` · <a href="${s.target_url}" rel="noopener noreferrer nofollow">details</a>` : ''}</li>`,
  );
  const a = ch.auto_merge;
  const auto = a
    ? html`<p data-auto-merge="${a.status}">Merge when green: <strong>${a.status}</strong> on <code>${shortSha(a.head_sha)}</code>${a.reason ? html` (${a.reason})` : ''}</p>`
    : '';
  const q = ch.merge_queue;
  const queue = q ? queueLine(q, cr, base) : '';
  const canAsk = cr.status === 'open' && !!headSha && (ch.checks.length > 0 || ch.statuses.some((s) => s.required)) && a?.status !== 'pending' && q?.status !== 'queued';
  const ask = canAsk
    ? html`<form method="post" action="${base}/merge-when-green" data-fetch class="merge-when-green"><input type="hidden" name="_csrf" value="${csrf}">
<input type="hidden" name="expected_head_sha" value="${headSha}"><button type="submit">Merge when green</button>
<span class="muted">merges <code>${shortSha(headSha)}</code> once every check passes; a new push cancels it</span></form>`
    : '';
  return html`<section aria-labelledby="checks-h" data-live="cr-checks"><h2 id="checks-h">Checks</h2>
${runs.length || statuses.length ? html`<ul class="checks">${runs}${statuses}</ul>` : html`<p class="muted">No checks: svc.toml names no [[checks]].</p>`}
${auto}${queue}${ask}</section>`;
}

const LEFT: Record<string, string> = {
  check_failed: 'a check failed on its merge result',
  conflict: 'it does not merge onto the change requests ahead of it',
  head_moved: 'its head moved after it was queued',
  base_changed: 'its base branch was changed',
  closed: 'it was closed',
  by_person: 'a person took it out',
};

/** Where the CR is in its base branch's merge queue, or why it left (its position: the queue's page). */
function queueLine(q: NonNullable<CrChecks['merge_queue']>, cr: ChangeRequest, base: string): Html {
  const page = html`<a href="${base.replace(/\/change-requests\/[^/]+$/, '')}/merge-queue?base=${encodeURIComponent(cr.base_ref)}">merge queue of <code>${cr.base_ref}</code></a>`;
  if (q.status === 'queued') return html`<p data-merge-queue="queued">In the ${page} on <code>${shortSha(q.head_sha)}</code> since ${timeAgo(q.queued_at)}.</p>`;
  if (q.status === 'merged') return html`<p data-merge-queue="merged">Landed by the ${page}${q.left_at ? html` ${timeAgo(q.left_at)}` : ''}.</p>`;
  return html`<p data-merge-queue="left" data-reason="${q.reason ?? ''}">Left the ${page}: <strong>${q.reason ?? ''}</strong>, ${LEFT[q.reason ?? ''] ?? ''}${q.context ? html` (${q.context})` : ''}${q.left_at ? html` · ${timeAgo(q.left_at)}` : ''}.</p>`;
}

const AskBody = z.object({ _csrf: z.string().optional(), expected_head_sha: z.string().regex(/^[0-9a-f]{40}$/) });

/** The button's post and the logs, for a signed-in person (cookie session; never an agent). */
export function checksPageRoutes(deps: ApiDeps): Router {
  const r = Router({ mergeParams: true });
  const crBase = (req: Request) => `/projects/${encodeURIComponent(String(req.params.projectId))}/change-requests/${encodeURIComponent(String(req.params.n))}`;

  r.post('/projects/:projectId/change-requests/:n/merge-when-green', requireCsrf, async (req: Request, res: Response) => {
    const b = AskBody.parse(req.body ?? {});
    const project = await projectOf(deps, req, res);
    try {
      await deps.services.checks.mergeWhenGreen(project, String(req.params.n), callerOf(res).user_id, { expected_head_sha: b.expected_head_sha });
    } catch (e) {
      if (isDomainError(e) && ['head_modified', 'merge_failed', 'no_required_checks'].includes(e.code) && !(req.headers.accept ?? '').includes('application/json')) {
        return res.redirect(303, `${crBase(req)}?error=${e.code}`);
      }
      throw e;
    }
    respond(req, res, crBase(req), 'merge_when_green');
  });

  r.get('/projects/:projectId/change-requests/:n/checks/:runId/log', async (req: Request, res: Response) => {
    const project = await projectOf(deps, req, res);
    res.set(LOG_HEADERS).send(await deps.services.checks.readLog(project, String(req.params.n), String(req.params.runId)));
  });
  return r;
}
