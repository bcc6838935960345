import { Router, type NextFunction, type Request, type Response } from 'express';
import { bodyBudget, readBody } from '../body.js';
import type { ApiDeps } from '../deps.js';
import { openAiError, openAiErrorHandler } from '../errors.js';
import * as gateway from '../../services/llm/gateway.js';
import * as ledger from '../../services/llm/ledger.js';
import type { ApiServices } from '../../services/api-services/index.js';
import { checkGateway } from '../gateway.js';

/**
 * A chat completion's body limit (docs/models.md): conversations with long tool outputs
 * are larger than the API's 1 MiB. Read only once the sandbox key was checked.
 */
export const GATEWAY_BODY_LIMIT = 32 * 1024 * 1024;
/** Bytes of chat-completion bodies one process holds at once, across every sandbox (`bodyBudget`). */
export const GATEWAY_BODIES_IN_FLIGHT = 64 * 1024 * 1024;

/**
 * `/v1/llm`: the model gateway (services/llm/gateway.ts, docs/models.md). Sandbox keys
 * only (no PAT, no cookie); errors in OpenAI's shape. Mounted before the API's JSON parser:
 * conversations with long tool outputs are larger than the API's 1 MiB.
 */
export function llmGatewayRoutes(deps: ApiDeps): Router {
  const r = Router();
  const g = deps.services.llm;

  // A sandbox's model key only through that sandbox's own gateway socket (api/gateway.ts).
  const authorize = async (req: Request): Promise<gateway.LlmPrincipal> => {
    const p = await g.authorize(req.headers.authorization);
    checkGateway(req, { sandbox_id: p.sandbox_id, provider: await deps.services.auth.sandboxProvider(p.sandbox_id) });
    return p;
  };

  r.get('/models', async (req, res) => {
    await authorize(req);
    res.json({ object: 'list', data: g.models().map((id) => ({ id, object: 'model', created: 0, owned_by: 'svc' })) });
  });

  // The key first, from the header; the body (up to GATEWAY_BODY_LIMIT) only after it.
  const authorized = (req: Request, res: Response, next: NextFunction) => {
    authorize(req).then((p) => {
      (res.locals as { llm?: gateway.LlmPrincipal }).llm = p;
      next();
    }, next);
  };
  const bodies = bodyBudget(GATEWAY_BODIES_IN_FLIGHT, GATEWAY_BODY_LIMIT);
  r.post('/chat/completions', authorized, bodies, readBody(GATEWAY_BODY_LIMIT), async (req, res) => {
    const p = (res.locals as { llm: gateway.LlmPrincipal }).llm;
    const body = req.body as unknown;
    if (!body || typeof body !== 'object' || Array.isArray(body)) {
      res.status(400).json(openAiError(400, 'The body must be a JSON object.', 'invalid_request'));
      return;
    }
    const model = g.assertCallable((body as { model?: unknown }).model);
    const abort = new AbortController();
    res.on('close', () => {
      if (!res.writableFinished) abort.abort();
    });
    // Reserved before anything goes upstream, settled however the call ends (services/llm/ledger.ts).
    const reservation = await g.reserve(p, body as Record<string, unknown>, { signal: abort.signal }).catch((err: unknown) => {
      if (abort.signal.aborted) return null; // the caller left while waiting: nothing reserved, nobody to answer
      throw err;
    });
    if (!reservation) return;
    await relay(g, p, model, reservation, ledger.budgetedBody(body as Record<string, unknown>, reservation), req, res, abort.signal);
  });

  r.use((req, res) => {
    res.status(404).json(openAiError(404, `The model gateway serves POST /v1/llm/chat/completions and GET /v1/llm/models, not ${req.method} ${req.path}.`, 'unknown_route'));
  });
  r.use(openAiErrorHandler(deps.logger));
  return r;
}

/**
 * Streams the upstream's answer to the caller chunk by chunk (no buffering), counting its
 * usage, and settles the call's reservation however it ends: to the usage the upstream
 * reported; without it (the caller left, the upstream died) to what streamed plus the
 * prompt's estimate; refused upstream, to nothing. Settled and recorded before the answer
 * ends, so a caller reading its usage next sees this call.
 */
async function relay(
  g: ApiServices['llm'],
  p: gateway.LlmPrincipal,
  model: string,
  reservation: ledger.Reservation,
  body: Record<string, unknown>,
  req: Request,
  res: Response,
  signal: AbortSignal,
): Promise<void> {
  const call: Call = { end: { kind: 'refused' }, status: 0, finish: () => undefined };
  try {
    const leftBefore = signal.aborted; // then nothing is sent: charged nothing
    const up = await g.callUpstream(body, req.headers.accept, signal).catch((err: unknown) => {
      // The caller left with the request upstream: a stream stops with it (the prompt may have
      // been read); a non-streamed answer is generated anyway.
      if (signal.aborted && !leftBefore) call.end = body.stream === true ? { kind: 'unreported', outputChars: 0 } : { kind: 'abandoned' };
      throw err;
    });
    call.status = up.status;
    await answer(g, p, model, up, res, call);
  } catch (err) {
    if (!signal.aborted) throw err;
  } finally {
    await g.settle(reservation, call.end).catch((err: Error) => g.logger.error({ err: err.message }, 'model call not settled'));
    if (call.end.kind !== 'refused') {
      await g.recordUsage(p, model, ledger.usageOfCall(reservation, call.end), call.status).catch((err: Error) => g.logger.error({ err: err.message }, 'usage not recorded'));
    }
  }
  call.finish();
}

/** How a call is going: what it will be charged, and how its answer ends once settled. */
interface Call {
  end: ledger.CallEnd;
  status: number;
  finish: () => void;
}

async function answer(g: Pick<ApiServices['llm'], 'logger'>, p: gateway.LlmPrincipal, model: string, up: globalThis.Response, res: Response, call: Call): Promise<void> {
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
  // From here the upstream took the call: never charged less than the prompt.
  call.end = { kind: 'unreported', outputChars: 0 };
  if (!/text\/event-stream/i.test(type) || !up.body) {
    // Until the whole answer is read, a caller that leaves has still had it generated.
    call.end = { kind: 'abandoned' };
    const text = await up.text();
    const usage = gateway.UsageTap.ofJson(text);
    call.end = usage ? { kind: 'usage', usage } : { kind: 'unreported', outputChars: gateway.UsageTap.outputCharsOfJson(text) };
    call.finish = () => res.status(up.status).type(type).send(text);
    return;
  }
  res.status(up.status);
  res.set({ 'content-type': type, 'cache-control': 'no-cache', 'x-accel-buffering': 'no' });
  res.flushHeaders();
  const tap = new gateway.UsageTap();
  try {
    for await (const chunk of up.body as unknown as AsyncIterable<Uint8Array>) {
      tap.feed(chunk);
      call.end = { kind: 'unreported', outputChars: tap.outputChars };
      if (!res.write(chunk)) await new Promise<void>((resolve) => res.once('drain', resolve).once('close', resolve));
      if (res.destroyed) break;
    }
    call.finish = () => res.end();
  } catch (err) {
    g.logger.warn({ session_id: p.session_id, model, err: (err as Error).message }, 'model stream cut');
    call.finish = () => res.destroy();
  }
  const usage = tap.end();
  call.end = usage ? { kind: 'usage', usage } : { kind: 'unreported', outputChars: tap.outputChars };
}
