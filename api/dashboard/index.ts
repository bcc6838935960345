import { Router, type ErrorRequestHandler } from 'express';
import { z } from 'zod';
import { DomainError } from '../../domain/errors.js';
import type { ApiDeps } from '../deps.js';
import { bodyOf, limitText, statusOf, zodIssues } from '../errors.js';
import { BODY_LIMIT, CREDENTIAL_BODY_LIMIT, readBody } from '../body.js';
import { assetRoutes } from './assets.js';
import { cliLoginRoutes } from './cli-login.js';
import { loadSession, locals, requireSession } from './context.js';
import { crPageRoutes } from './cr-page.js';
import { crReviewRoutes } from './cr-review.js';
import { checksPageRoutes } from './checks-section.js';
import { html } from './html.js';
import { page } from './layout.js';
import { liveRoutes } from './live.js';
import { projectPages } from './projects-pages.js';
import { sessionPages } from './sessions-pages.js';
import { signInRoutes } from './sign-in.js';
import { tokensPage } from './tokens-page.js';
import { secretsPage } from './secrets-page.js';
import { triggersPage } from './triggers-page.js';
import { appsPage } from './apps-page.js';
import { insightsPage } from './insights-page.js';
import { mergeQueuePage } from './merge-queue-page.js';
import { previewEntry } from './preview-entry.js';
import { previewFrameSource } from '../../services/previews/origin.js';
import { appsSource } from '../../services/apps/origin.js';

/**
 * The dashboard, served at `/` by the API server: server-rendered pages over the services
 * (called directly, with the signed-in user as the caller, under the API's access rules),
 * cookie sessions, CSRF on every state change. The API under /v1 never sees the cookie.
 */
export function dashboardRoutes(deps: ApiDeps): Router {
  const getStore = deps.services.previews.dashboardSessions;

  const frameSrc = previewFrameSource(deps.settings);
  const appsSrc = appsSource(deps.settings);
  const r = Router();
  r.use(assetRoutes());
  r.use((req, res, next) => {
    if (req.path.startsWith('/v1/') || req.path === '/v1') return next('router');
    // Pages are never framed by other sites, and hold no third-party content.
    res.set({
      'X-Frame-Options': 'SAMEORIGIN',
      // Frames: the previews' own origins only (docs/sessions.md "Previews"). Forms may end
      // on an app's origin: signing in on the way to a members-only app goes back to it.
      'Content-Security-Policy': `default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; frame-src 'self' ${frameSrc}; frame-ancestors 'self'; form-action 'self' http://127.0.0.1:* http://localhost:* ${appsSrc}; base-uri 'none'`,
      'X-Content-Type-Options': 'nosniff',
      // A link out (an app, a preview, a CR's URL) never tells the other site which page it came from.
      'Referrer-Policy': 'no-referrer',
    });
    next();
  });
  r.use(loadSession(getStore));
  // The form is read once the cookie named a session (the password form before any: 16 KiB).
  r.use(readBody((req, res) => (locals(res).session ? BODY_LIMIT : req.method === 'POST' && req.path === '/login' ? CREDENTIAL_BODY_LIMIT : null), { forms: true }));
  r.use(signInRoutes(deps));
  r.use(requireSession);
  r.use(cliLoginRoutes(deps));
  r.use(projectPages(deps));
  r.use(liveRoutes(deps));
  r.use(tokensPage(deps));
  r.use(sessionPages(deps));
  r.use(previewEntry(deps));
  r.use(secretsPage(deps));
  r.use(triggersPage(deps));
  r.use(appsPage(deps));
  r.use(insightsPage(deps));
  r.use(mergeQueuePage(deps));
  r.use(checksPageRoutes(deps)); // before the CR page: its /merge-when-green and /checks/:runId/log
  r.use(crPageRoutes(deps));
  r.use(crReviewRoutes(deps)); // review comments, send to agent
  // Any other path outside /v1 is a page that does not exist: the HTML 404 below.
  r.use((_req, _res, next) => next(new DomainError('not_found', 'Not found', 'There is no page at this address.')));
  r.use(dashboardErrors(deps.logger));
  return r;
}

/** Errors, 404s included, as a page to a browser (or, for the page's script and non-browsers, the API's JSON body). */
function dashboardErrors(logger: ApiDeps['logger']): ErrorRequestHandler {
  return (err0, req, res, next) => {
    if (res.headersSent) return next(err0);
    let err: unknown = err0;
    if (err instanceof z.ZodError) {
      const issues = zodIssues(err);
      err = new DomainError('validation', 'Validation failed', issues.map((i) => `${i.path}: ${i.message}`).join('; '), { issues });
    }
    if (!(err instanceof DomainError)) {
      const type = (err as { type?: string }).type;
      if (type === 'entity.too.large') err = new DomainError('payload_too_large', 'Payload too large', `The form is larger than ${limitText(err)}.`);
      else if (typeof type === 'string' && type.startsWith('entity.') || type === 'parameters.too.many') err = new DomainError('validation', 'Bad request', 'The form could not be read.');
      else {
        logger.error({ err, method: req.method, path: req.path }, 'dashboard error');
        err = new DomainError('unavailable', 'Internal error', 'Something went wrong on our side.');
        (err as { status?: number }).status = 500;
      }
    }
    const e = err as DomainError & { status?: number };
    const status = e.status ?? statusOf[e.code];
    // Browsers (navigations, form posts) ask for HTML; anything else gets the API's body.
    const accept = req.headers.accept ?? '';
    if (accept.includes('application/json') || !accept.includes('text/html')) {
      res.status(status).json(bodyOf(e));
      return;
    }
    const session = locals(res).session;
    res.status(status).type('html').send(page({
      title: e.reason, user: session?.user ?? null, csrf: session?.csrf_token ?? '',
      body: html`<section class="narrow"><h1>${e.reason}</h1><p>${e.message}</p><p><a href="/projects">Back to projects</a></p></section>`,
    }));
  };
}
