import express, { type Express } from 'express';
import { BODY_LIMIT, CREDENTIAL_BODY_LIMIT, readBody, unreadBodies } from './body.js';
import type { ApiDeps } from './deps.js';
import { requireAuth } from './auth.js';
import { errorHandler, notFoundHandler } from './errors.js';
import { metricsMiddleware } from './metrics.js';
import { healthRoutes } from './routes/health.js';
import { accountRoutes } from './routes/accounts.js';
import { projectRoutes } from './routes/projects.js';
import { changeRequestRoutes } from './routes/change-requests.js';
import { compareRoutes } from './routes/compare.js';
import { reviewRoutes } from './routes/review.js';
import { openapiRoutes } from './routes/openapi.js';
import { gitHttpRoutes } from './routes/git-http.js';
import { channelRoutes } from './routes/channels.js';
import { accountBudgetRoutes, projectBudgetRoutes } from './routes/budgets.js';
import { manifestRoutes } from './routes/manifest.js';
import { triggerRoutes } from './routes/triggers.js';
import { appRoutes } from './routes/apps.js';
import { acceptAccessToken, type EventsFeed } from './routes/events-feed.js';
import { dashboardRoutes } from './dashboard/index.js';
import { cliLoginRoutes } from './routes/cli-login.js';
import { dashboardProxyAuth } from './dashboard/proxy-auth.js';
import { sessionRefreshRoutes } from './routes/session-refresh.js';
import { sessionRoutes } from './routes/sessions.js';
import { sessionWipRoutes } from './routes/session-wip.js';
import { sessionProxyRoutes } from './routes/session-proxy.js';
import { cloneCredentialRoutes } from './routes/clone-credential.js';
import { previewHostHandler } from './preview-host.js';
import { appHostHandler } from './app-host.js';
import { previewUrlRoutes } from './routes/preview-url.js';
import { llmGatewayRoutes } from './routes/llm-gateway.js';
import { agentGate } from './agent-gate.js';
import { checkRoutes, statusRoutes } from './routes/checks.js';
import { costRoutes } from './routes/cost.js';
import { accountInsightsRoutes, projectInsightsRoutes } from './routes/insights.js';
import { mergeQueueRoutes } from './routes/merge-queue.js';

/** The HTTP API: thin routes over the services; errors mapped once, in api/errors.ts. */
export function createApp(deps: ApiDeps, opts: { feed?: EventsFeed } = {}): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('query parser', 'simple');
  // No body is read before its caller is known (api/body.ts): a refused request's large body
  // is never read, its connection closed after the answer.
  app.use(unreadBodies);
  // An app's and a preview's own origins (<app>-<project>.<apps domain>,
  // p<port>-<session>.<preview domain>) are routed by Host before anything else: they never
  // reach the API or the dashboard.
  app.use(appHostHandler(deps));
  app.use(previewHostHandler(deps));
  app.use(metricsMiddleware(deps.metrics));
  app.use(healthRoutes(deps));
  app.use(openapiRoutes());
  app.use('/git', gitHttpRoutes(deps)); // managed repositories over smart HTTP
  // Sessions: the sandbox proxy streams raw bodies, so it comes before the JSON parser.
  app.use('/v1/projects/:projectId/sessions/:sessionId', dashboardProxyAuth(deps)); // dashboard: the cookie, on the proxy only
  app.use('/v1/projects/:projectId/sessions/:sessionId', sessionProxyRoutes(deps));
  app.use('/v1/projects/:projectId/sessions/:sessionId/wip', sessionWipRoutes(deps)); // SVC_TOKEN of the session's sandbox only; a binary body
  app.use('/v1/llm', llmGatewayRoutes(deps)); // sandbox keys only; OpenAI-shaped errors; its own body limit, read after the key

  const v1 = express.Router();
  v1.use('/projects/:projectId/events', acceptAccessToken);
  v1.use('/projects/:projectId/git/clone-credential', cloneCredentialRoutes(deps)); // SVC_TOKEN only, before PATs
  v1.use('/cli/login', readBody(CREDENTIAL_BODY_LIMIT), cliLoginRoutes(deps)); // svc login redeems its one-time code: no token yet, 16 KiB
  v1.use(requireAuth(deps.services.auth, deps.guard));
  v1.use(readBody(BODY_LIMIT)); // the API's bodies: read only now, the caller known
  v1.use(agentGate); // agent-grade tokens: only what services/tokens/agent-policy.ts allows
  if (opts.feed) v1.use('/projects/:projectId/events', opts.feed.routes(deps));
  v1.use('/accounts/:accountId/budget', accountBudgetRoutes(deps)); // a person's model budget (agents refused by the gate)
  v1.use('/accounts', accountRoutes(deps));
  v1.use('/accounts/:accountId/insights', accountInsightsRoutes(deps)); // after accountRoutes' user-token check
  v1.use('/projects/:projectId/change-requests/:crId/checks', checkRoutes(deps)); // checks, logs
  v1.use('/projects/:projectId/change-requests/:crId/cost', costRoutes(deps)); // tokens, money, seconds
  v1.use('/projects/:projectId/statuses', statusRoutes(deps));
  v1.use('/projects/:projectId/merge-queue', mergeQueueRoutes(deps));
  v1.use('/projects/:projectId/change-requests', changeRequestRoutes(deps));
  v1.use('/projects/:projectId/compare', compareRoutes(deps));
  v1.use('/projects/:projectId/change-requests', reviewRoutes(deps)); // comments, review, send to agent
  v1.use('/projects/:projectId/channels', channelRoutes(deps));
  v1.use('/projects/:projectId/budget', projectBudgetRoutes(deps));
  v1.use('/projects/:projectId/sessions/:sessionId/refresh', sessionRefreshRoutes(deps)); // dashboard's Refresh
  v1.use('/projects/:projectId/sessions/:sessionId/preview-url', previewUrlRoutes(deps));
  v1.use('/projects/:projectId/sessions', sessionRoutes(deps));
  v1.use('/projects/:projectId/triggers', triggerRoutes(deps));
  v1.use('/projects/:projectId/apps', appRoutes(deps));
  v1.use('/projects/:projectId/insights', projectInsightsRoutes(deps));
  v1.use('/projects/:projectId', manifestRoutes(deps));
  v1.use('/projects', projectRoutes(deps));
  app.use('/v1', v1);
  app.use(dashboardRoutes(deps)); // the dashboard at / (cookie sessions; never under /v1)

  app.use(notFoundHandler);
  app.use(errorHandler(deps.logger));
  return app;
}
