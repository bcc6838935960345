import { html, type Html } from './html.js';
import type { DashboardUser } from '../../services/dashboard/sessions.js';

export interface PageOptions {
  title: string;
  user?: DashboardUser | null;
  csrf?: string;
  /** Breadcrumb links, outermost first. */
  crumbs?: Array<{ href: string; label: string }>;
  /** A notice shown above the content (status role: read out by screen readers). */
  notice?: { kind: 'error' | 'ok'; text: string } | null;
  body: Html;
}

/** The page frame: one stylesheet, one small script, nothing else loaded. */
export function page(o: PageOptions): string {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="same-origin">
${o.csrf ? html`<meta name="csrf-token" content="${o.csrf}">` : ''}
<title>${o.title} · svc</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/assets/app.css">
<script src="/assets/app.js" defer></script>
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<header class="top">
  <a class="brand" href="/projects">svc</a>
  <nav aria-label="Breadcrumb">${(o.crumbs ?? []).map((c) => html`<span class="sep">/</span><a href="${c.href}">${c.label}</a>`)}</nav>
  ${o.user
    ? html`<nav class="me" aria-label="Account"><a href="/tokens">Tokens</a>
      <form method="post" action="/logout" class="inline"><input type="hidden" name="_csrf" value="${o.csrf ?? ''}"><button type="submit" class="link">Sign out</button></form>
      <form method="post" action="/logout/everywhere" class="inline"><input type="hidden" name="_csrf" value="${o.csrf ?? ''}"><button type="submit" class="link">Sign out everywhere</button></form>
      <span class="who">${o.user.email}</span></nav>`
    : ''}
</header>
<main id="main" tabindex="-1">
<div id="notice" role="status" aria-live="polite">${o.notice ? html`<p class="notice ${o.notice.kind}">${o.notice.text}</p>` : ''}</div>
${o.body}
</main>
</body>
</html>`.value;
}
