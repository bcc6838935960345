import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { sandboxName } from '../../infra/sandbox/provider-util.js';
import { sandboxesRoot } from '../../infra/sandbox/registry.js';
import type { SandboxProviderName } from '../../infra/sandbox/port.js';
import { sessionQueries } from '../../sql/queries/sessions.js';
import type { SessionDeps } from './deps.js';

/**
 * A sandbox that fails to start says why: the tail of what its entrypoint, daemon and
 * runtime printed is kept for the session's error (`error.log`), read before the sandbox
 * (and its directory) is destroyed. Stored on a row (session_failure_logs), never in an
 * event, and with every known secret and token value redacted first.
 */
export const FAILURE_LOG_BYTES = 4000;

/** The process and bwrap providers' `sandbox.log`; other providers keep no host file (''). */
export async function sandboxLogTail(deps: { config: Pick<SessionDeps['config'], 'dataDir'> }, provider: SandboxProviderName, sandboxId: string, maxBytes = FAILURE_LOG_BYTES): Promise<string> {
  if (provider !== 'process' && provider !== 'bwrap') return '';
  const root = sandboxesRoot(deps.config);
  for (const dir of new Set([sandboxId, sandboxName(sandboxId)])) {
    const text = await readFile(path.join(root, dir, 'sandbox.log'), 'utf8').catch(() => null);
    if (text !== null) return text.slice(-maxBytes * 2);
  }
  return '';
}

/** Token shapes this server mints, redacted wherever they appear. */
const TOKEN_SHAPES = /\bsvc_(?:pat|sbx|llm)_[A-Za-z0-9_-]{8,}/g;

/**
 * Replaces every known secret value (the sandbox's keys, the project's secrets, the
 * server's own upstream and secret keys) and every token-shaped string with
 * `[redacted]`. Values shorter than 6 characters are left: they would blank out ordinary
 * words and are no secret worth the name.
 */
export function redactLog(text: string, known: Iterable<string>): string {
  let out = text;
  const values = [...new Set([...known].filter((v) => typeof v === 'string' && v.length >= 6))].sort((a, b) => b.length - a.length);
  for (const v of values) out = out.split(v).join('[redacted]');
  return out.replace(TOKEN_SHAPES, '[redacted]');
}

/** The redacted tail, last `maxBytes` characters, starting at a line. */
export function tailOf(text: string, maxBytes = FAILURE_LOG_BYTES): string {
  const t = text.trimEnd();
  if (t.length <= maxBytes) return t;
  const cut = t.slice(-maxBytes);
  const nl = cut.indexOf('\n');
  return nl >= 0 && nl < cut.length - 1 ? cut.slice(nl + 1) : cut;
}

/** Reads, redacts and keeps a failed sandbox's log tail; never throws (the failure is what matters). */
export async function keepFailureLog(
  deps: Pick<SessionDeps, 'config' | 'db' | 'logger'>,
  i: { sessionId: string; sandboxId: string; provider: SandboxProviderName; secretValues: string[] },
): Promise<string> {
  try {
    const raw = await sandboxLogTail(deps, i.provider, i.sandboxId);
    if (!raw.trim()) return '';
    const known = [...i.secretValues, ...(deps.config.SVC_LLM_UPSTREAM_KEY ? [deps.config.SVC_LLM_UPSTREAM_KEY] : []), ...(deps.config.SVC_SECRET_KEY ? [deps.config.SVC_SECRET_KEY] : [])];
    const log = tailOf(redactLog(raw, known));
    await deps.db.run(sessionQueries.saveFailureLog(i.sessionId, i.sandboxId, log));
    return log;
  } catch (err) {
    deps.logger.warn({ session_id: i.sessionId, err: (err as Error).message }, 'failure log not kept');
    return '';
  }
}
