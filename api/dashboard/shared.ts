import type { Request, Response } from 'express';
import type { Project } from '../../cli/api-client.js';
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
};
const ERRORS: Record<string, string> = {
  head_modified: 'Head branch was modified since this page loaded. Review the new commits below, then merge again.',
  merge_failed: 'The merge has conflicts; see the merge preview.',
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

export function crumbsOf(project: Project, ...more: Array<{ href: string; label: string }>) {
  return [{ href: '/projects', label: 'Projects' }, { href: `/projects/${project.project_id}`, label: project.name }, ...more];
}

export const tabs = (items: Array<{ href: string; label: string; current: boolean }>): Html =>
  html`<nav class="tabs">${items.map((i) => html`<a href="${i.href}" ${i.current ? html`aria-current="page"` : ''}>${i.label}</a>`)}</nav>`;
