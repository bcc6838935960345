import { Router, type NextFunction, type Request, type Response } from 'express';
import { readBody } from '../body.js';
import type { ApiDeps } from '../deps.js';
import { openAiError, openAiErrorHandler } from '../errors.js';
import * as gateway from '../../services/llm/gateway.js';
import { gatewayModels } from '../../services/sessions/model-choice.js';
import { sandboxProvider } from '../../services/sessions/credentials.js';
import { checkGateway } from '../gateway.js';

/**
 * A chat completion's body limit (docs/models.md): conversations with long tool outputs
 * are larger than the API's 1 MiB. Read only once the sandbox key was checked.
 */
export const GATEWAY_BODY_LIMIT = 32 * 1024 * 1024;

/**
 * `/v1/llm`: the model gateway (services/llm/gateway.ts, docs/models.md). Sandbox keys
 * only (no PAT, no cookie); errors in OpenAI's shape. Mounted before the API's JSON parser:
 * conversations with long tool outputs are larger than the API's 1 MiB.
 */
export function llmGatewayRoutes(deps: ApiDeps): Router {
  const r = Router();
  const g: gateway.GatewayDeps = { config: deps.config, db: deps.db, logger: deps.logger.child({ component: 'llm-gateway' }) };

  // A sandbox's model key only through that sandbox's own gateway socket (api/gateway.ts).
  const authorize = async (req: Request): Promise<gateway.LlmPrincipal> => {
    const p = await gateway.authorizeCall(g, req.headers.authorization);
    checkGateway(req, { sandbox_id: p.sandbox_id, provider: await sandboxProvider(deps.db, p.sandbox_id) });
    return p;
  };

  r.get('/models', async (req, res) => {
    await authorize(req);
    res.json({ object: 'list', data: gatewayModels(deps.config).map((id) => ({ id, object: 'model', created: 0, owned_by: 'svc' })) });
  });

  // The key first, from the header; the body (up to GATEWAY_BODY_LIMIT) only after it.
  const authorized = (req: Request, res: Response, next: NextFunction) => {
    authorize(req).then((p) => {
      (res.locals as { llm?: gateway.LlmPrincipal }).llm = p;
      next();
    }, next);
  };
  r.post('/chat/completions', authorized, readBody(GATEWAY_BODY_LIMIT), async (req, res) => {
    const p = (res.locals as { llm: gateway.LlmPrincipal }).llm;
    const body = req.body as unknown;
    if (!body || typeof body !== 'object' || Array.isArray(body)) {
      res.status(400).json(openAiError(400, 'The body must be a JSON object.', 'invalid_request'));
      return;
    }
    const model = gateway.assertModelAllowed(deps.config, (body as { model?: unknown }).model);
    gateway.upstreamUrl(deps.config);
    await gateway.assertBudget(g, p);
    await relay(g, p, model, body as Record<string, unknown>, req, res);
  });

  r.use((req, res) => {
    res.status(404).json(openAiError(404, `The model gateway serves POST /v1/llm/chat/completions and GET /v1/llm/models, not ${req.method} ${req.path}.`, 'unknown_route'));
  });
  r.use(openAiErrorHandler(deps.logger));
  return r;
}

/** Streams the upstream's answer to the caller chunk by chunk (no buffering), counting its usage. */
async function relay(g: gateway.GatewayDeps, p: gateway.LlmPrincipal, model: string, body: Record<string, unknown>, req: Request, res: Response): Promise<void> {
  const abort = new AbortController();
  res.on('close', () => {
    if (!res.writableFinished) abort.abort();
  });
  const up = await gateway.callUpstream(g, body, req.headers.accept, abort.signal);
  const type = up.headers.get('content-type') ?? 'application/json';
  if (!up.ok) {
    const text = await up.text().catch(() => '');
    let parsed: unknown = null;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = null;
    }
    const upstreamMessage = (parsed as { error?: { message?: unknown } } | null)?.error?.message;
    g.logger.warn({ session_id: p.session_id, model, status: up.status }, 'model upstream refused a call');
    res.status(up.status >= 400 && up.status < 600 ? up.status : 502).json(
      parsed && typeof (parsed as { error?: unknown }).error === 'object'
        ? parsed
        : openAiError(up.status, typeof upstreamMessage === 'string' ? upstreamMessage : `The model upstream answered ${up.status}.`, 'upstream_error'),
    );
    return;
  }
  if (!/text\/event-stream/i.test(type) || !up.body) {
    const text = await up.text();
    // Recorded before the answer: a caller that reads its session's usage next sees this call.
    await gateway.recordUsage(g, p, model, gateway.UsageTap.ofJson(text), up.status).catch((err: Error) => g.logger.error({ err: err.message }, 'usage not recorded'));
    res.status(up.status).type(type).send(text);
    return;
  }
  res.status(up.status);
  res.set({ 'content-type': type, 'cache-control': 'no-cache', 'x-accel-buffering': 'no' });
  res.flushHeaders();
  const tap = new gateway.UsageTap();
  const record = () => gateway.recordUsage(g, p, model, tap.end(), up.status).catch((err: Error) => g.logger.error({ err: err.message }, 'usage not recorded'));
  try {
    for await (const chunk of up.body as unknown as AsyncIterable<Uint8Array>) {
      tap.feed(chunk);
      if (!res.write(chunk)) await new Promise<void>((resolve) => res.once('drain', resolve).once('close', resolve));
      if (res.destroyed) break;
    }
    // The usage chunk has passed: recorded before the stream ends, so it counts at once.
    await record();
    res.end();
  } catch (err) {
    g.logger.warn({ session_id: p.session_id, model, err: (err as Error).message }, 'model stream cut');
    await record();
    res.destroy();
  }
}
