import type { Request, Response } from 'express';
import { isDomainError } from '../../domain/errors.js';
import { statusOf } from '../errors.js';
import { html, type Html } from './html.js';

/** What a form post says when it comes back: fixed texts only, never text from the URL. */
const NOTICES: Record<string, string> = {
  merged: 'Merged.',
  closed: 'Closed.',
  reopened: 'Reopened.',
  edited: 'Saved.',
  revoked: 'Token revoked.',
  stopped: 'Session stopped.',
  restarted: 'Session restarting.',
  removed: 'Session removed.',
  refreshed: 'Refresh requested: the sandbox re-pulls its branch and restarts the agent.',
  created: 'Created.',
  prompted: 'Prompt sent.',
  secret_set: 'Secret saved. Its value is not shown again.',
  secret_unset: 'Secret removed.',
  dequeued: 'Taken out of the merge queue.',
  merge_when_green: 'The server merges this change request once every check passes on the head shown; a new push cancels it.',
};
const ERRORS: Record<string, string> = {
  head_modified: 'Head branch was modified since this page loaded. Review the new commits below, then merge again.',
  merge_failed: 'The merge has conflicts; see the merge preview.',
  no_required_checks: 'Nothing would have to pass: svc.toml names no checks and no required statuses. Merge directly.',
  merge_queue_enabled: 'svc.toml turns the merge queue on: use Merge when green to queue this change request.',
};

export function noticeOf(q: { notice?: string | undefined; error?: string | undefined }): { kind: 'ok' | 'error'; text: string } | null {
  if (q.error && ERRORS[q.error]) return { kind: 'error', text: ERRORS[q.error]! };
  if (q.notice && NOTICES[q.notice]) return { kind: 'ok', text: NOTICES[q.notice]! };
  return null;
}

/** After a state change: a redirect for a plain form, JSON for the page's script. */
export function respond(req: Request, res: Response, back: string, notice: string, extra: Record<string, unknown> = {}): void {
  if ((req.headers.accept ?? '').includes('application/json')) {
    res.json({ ok: true, notice: NOTICES[notice] ?? notice, ...extra });
    return;
  }
  res.redirect(303, `${back}?notice=${notice}`);
}

export const statusBadge = (status: string) => html`<span class="badge s-${status}" data-status="${status}">${status}</span>`;

export function crumbsOf(project: { project_id: string; name: string }, ...more: Array<{ href: string; label: string }>) {
  return [{ href: '/projects', label: 'Projects' }, { href: `/projects/${project.project_id}`, label: project.name }, ...more];
}

export const tabs = (items: Array<{ href: string; label: string; current: boolean }>): Html =>
  html`<nav class="tabs">${items.map((i) => html`<a href="${i.href}" ${i.current ? html`aria-current="page"` : ''}>${i.label}</a>`)}</nav>`;

/** The project's sections, on the project page and each section's own page. */
export type ProjectSection = 'crs' | 'sessions' | 'secrets' | 'triggers' | 'apps' | 'insights' | 'queue';
export function projectNav(projectId: string, current: ProjectSection): Html {
  const base = `/projects/${projectId}`;
  const items: Array<[ProjectSection, string, string]> = [
    ['crs', base, 'Change requests'], ['sessions', `${base}/sessions`, 'Sessions'], ['secrets', `${base}/secrets`, 'Secrets'],
    ['triggers', `${base}/triggers`, 'Triggers'], ['apps', `${base}/apps`, 'Apps'], ['queue', `${base}/merge-queue`, 'Merge queue'], ['insights', `${base}/insights`, 'Insights'],
  ];
  return html`<nav class="tabs sections" aria-label="Project">${items.map(([k, href, label]) => html`<a href="${href}" ${k === current ? html`aria-current="page"` : ''}>${label}</a>`)}</nav>`;
}

/** A service's refusal (4xx/503) as a notice on the page it came from, with the API's status; anything else is thrown on. */
export function apiRefusal(e: unknown): { status: number; notice: { kind: 'error'; text: string } } | null {
  if (!isDomainError(e)) return null;
  const status = (e as { status?: number }).status ?? statusOf[e.code];
  if ((status >= 400 && status < 500 && status !== 401) || status === 503) {
    return { status, notice: { kind: 'error', text: e.message && e.message !== e.reason ? `${e.reason}: ${e.message}` : e.reason } };
  }
  return null;
}

/** Only http(s) addresses become links. */
export const httpUrl = (u: string | null | undefined): string | null => {
  if (!u) return null;
  try {
    const p = new URL(u).protocol;
    return p === 'http:' || p === 'https:' ? u : null;
  } catch {
    return null;
  }
};

/** An absolute time, readable on a phone: `2026-11-24 03:00 UTC`. */
export function when(iso: string | null | undefined): Html {
  if (!iso) return html`–`;
  return html`<time datetime="${iso}" title="${iso}">${iso.slice(0, 16).replace('T', ' ')} UTC</time>`;
}
