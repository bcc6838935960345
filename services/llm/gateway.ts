import { DomainError, type ErrorReason } from '../../domain/errors.js';
import type { Config } from '../../infra/config.js';
import type { Db } from '../../infra/db/db.js';
import type { Logger } from '../../lib/logger.js';
import { llmUsageQueries } from '../../sql/queries/llm-usage.js';
import { authenticateLlmKey, type SandboxPrincipal } from '../sessions/credentials.js';
import { gatewayModels } from '../sessions/model-choice.js';
import { UsageTap, type TokenUsage } from './usage-tap.js';
import { priceOf } from './prices.js';

/**
 * The model gateway (`/v1/llm`, docs/models.md): a sandbox's agent reaches the operator's
 * one OpenAI-compatible upstream through the server with its own key (SVC_LLM_API_KEY),
 * never with the upstream's. Only what the runtime needs passes: `chat/completions`
 * (streamed or not, tool calls included) and `models`. The request's headers stay here:
 * the upstream gets a fresh set (its own key, content type, accept), so no organization,
 * project, cookie or svc header leaves. Tokens the upstream reports are recorded per call
 * and budgeted per session and per account by reservations (ledger.ts).
 */
export interface GatewayDeps {
  config: Config;
  db: Db;
  logger: Logger;
}

export type LlmPrincipal = SandboxPrincipal & { account_id: string };

/** Errors carry an OpenAI error `code` in details (api/errors.ts answers them in OpenAI's shape). */
const gatewayError = (code: 'unauthorized' | 'rate_limited' | 'validation' | 'unavailable' | 'not_found', reason: ErrorReason, message: string, openaiCode: string) =>
  new DomainError(code, reason, message, { code: openaiCode });

export async function authorizeCall(deps: GatewayDeps, authorization: string | undefined): Promise<LlmPrincipal> {
  const m = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '');
  const p = m ? await authenticateLlmKey(deps.db, m[1]!) : null;
  if (!p) throw gatewayError('unauthorized', 'Unauthorized', 'The model gateway needs a live sandbox key: Authorization: Bearer <SVC_LLM_API_KEY>.', 'invalid_api_key');
  return p;
}

export function upstreamUrl(config: Config): string {
  if (!config.SVC_LLM_UPSTREAM_URL) {
    throw gatewayError('unavailable', 'No upstream', "The server's model gateway has no upstream: the operator sets SVC_LLM_UPSTREAM_URL (docs/models.md).", 'no_upstream');
  }
  return config.SVC_LLM_UPSTREAM_URL.replace(/\/+$/, '');
}

/** The models sessions may use; an empty list (no SVC_LLM_MODEL(S)) lets any through. */
export function assertModelAllowed(config: Config, model: unknown): string {
  if (typeof model !== 'string' || model === '') throw gatewayError('validation', 'Invalid request', 'model is required.', 'invalid_request');
  const offered = gatewayModels(config);
  if (offered.length && !offered.includes(model)) {
    throw gatewayError('not_found', 'Unknown model', `The model '${model}' is not offered by this gateway (${offered.join(', ')}).`, 'model_not_found');
  }
  return model;
}

/** The headers the upstream gets: nothing of the caller's but what the body needs. */
export function upstreamHeaders(config: Config, accept: string | undefined): Record<string, string> {
  return {
    'content-type': 'application/json',
    accept: accept && /^[\x20-\x7e]{1,200}$/.test(accept) ? accept : 'application/json',
    ...(config.SVC_LLM_UPSTREAM_KEY ? { authorization: `Bearer ${config.SVC_LLM_UPSTREAM_KEY}` } : {}),
  };
}

/**
 * The body sent upstream: the caller's, with streamed calls asked to end with a usage
 * chunk (`stream_options.include_usage`), which is what the budget counts.
 */
export function upstreamBody(body: Record<string, unknown>): string {
  const out = { ...body };
  if (out.stream === true) out.stream_options = { ...(typeof out.stream_options === 'object' && out.stream_options ? out.stream_options : {}), include_usage: true };
  return JSON.stringify(out);
}

/**
 * Calls the upstream, for SVC_LLM_UPSTREAM_TIMEOUT_MS at most (the stream included): past
 * it, the call's reservation may be expired by the sweep as a dead process's.
 */
export async function callUpstream(deps: GatewayDeps, body: Record<string, unknown>, accept: string | undefined, signal: AbortSignal): Promise<Response> {
  const url = `${upstreamUrl(deps.config)}/chat/completions`;
  const bounded = AbortSignal.any([signal, AbortSignal.timeout(deps.config.SVC_LLM_UPSTREAM_TIMEOUT_MS)]);
  try {
    return await fetch(url, { method: 'POST', headers: upstreamHeaders(deps.config, accept), body: upstreamBody(body), signal: bounded });
  } catch (err) {
    if (signal.aborted) throw err;
    throw gatewayError('unavailable', 'Upstream unreachable', `The model upstream did not answer: ${(err as Error).message}`, 'upstream_unreachable');
  }
}

export async function recordUsage(deps: GatewayDeps, p: LlmPrincipal, model: string, u: TokenUsage, status: number): Promise<void> {
  await deps.db.run(
    llmUsageQueries.insert({ accountId: p.account_id, projectId: p.project_id, sessionId: p.session_id, sandboxId: p.sandbox_id, model, inputTokens: u.input_tokens, outputTokens: u.output_tokens, status, price: priceOf(deps.config.SVC_LLM_PRICES, model) }),
  );
  deps.logger.info({ session_id: p.session_id, sandbox_id: p.sandbox_id, model, ...u, status }, 'model call');
}

export { UsageTap };
