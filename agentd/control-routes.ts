import type { IncomingMessage, ServerResponse } from 'node:http';
import { z } from 'zod';
import type { Logger } from '../lib/logger.js';
import { bearerMatches } from './auth.js';
import { CredentialError } from './credential.js';
import type { Health } from './health.js';
import { HttpError, parseBody, readJsonBody, sendJson, unauthorized } from './http-util.js';
import { RepoError } from './repo.js';
import { RuntimeError, type RuntimeClient } from './runtime-client.js';
import { DAEMON_OWNED_VARS, type RuntimeEnv } from './runtime-env.js';
import type { AgentState } from './supervisor.js';
import { claimBody, type ClaimBody } from './pool-claim.js';

/**
 * The control surface under `/svc/`, called by the platform. Health is public; the rest
 * needs `Authorization: Bearer <SVC_TOKEN>`. Handlers parse, call one operation, answer.
 */
export interface ControlDeps {
  token: string;
  logger: Logger;
  health: Health;
  runtime: {
    state: () => AgentState;
    /** Restarts the runtime (before boot finished: nothing to restart yet). */
    restart: (opts?: { force?: boolean }) => Promise<void>;
  };
  client: RuntimeClient;
  env: RuntimeEnv;
  /** Re-pulls the session branch and restarts the runtime. */
  refresh: () => Promise<{ before: string | null; after: string | null }>;
  sessions: { last: string | undefined };
  agentName: string | undefined;
  agentModel: string | undefined;
  abortTimeoutMs: number;
  /** Pause and resume: a checkpoint now (`final`: the runtime stopped first, no more after it); absent outside a session. */
  checkpoint?: (final: boolean) => Promise<unknown>;
  /** A pool sandbox only: hands it to a session (pool-claim.ts). */
  claim?: (body: ClaimBody) => Promise<{ branch: string | null; commit: string | null }>;
}

const promptBody = z.strictObject({
  text: z.string().min(1).max(512 * 1024),
  session_id: z.string().min(1).max(256).optional(),
  /** No session_id: the last agent conversation, where the prompt queues behind a running one (review feedback). */
  continue: z.boolean().optional(),
});
const abortBody = z.strictObject({ session_id: z.string().min(1).max(256).optional() });
const envName = z
  .string()
  .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'not a valid environment variable name')
  .max(256)
  .refine((n) => !(DAEMON_OWNED_VARS as readonly string[]).includes(n), 'set by the daemon, cannot be changed');
const envBody = z
  .strictObject({
    set: z.record(envName, z.string().max(128 * 1024).refine((v) => !v.includes('\0'), 'contains a NUL byte')).default({}),
    unset: z.array(envName).max(1000).default([]),
  })
  .refine((b) => Object.keys(b.set).length + b.unset.length > 0, 'give at least one variable to set or unset')
  .refine((b) => !b.unset.some((n) => n in b.set), 'a variable cannot be both set and unset');
const emptyBody = z.strictObject({});
const checkpointBody = z.strictObject({ final: z.boolean().optional() });

const runtimeUnavailable = () => new HttpError(503, 'Unavailable', 'The agent runtime is not running yet.');

function runtimeFailure(err: unknown, what: string): HttpError {
  if (err instanceof RuntimeError && err.status === 404) return new HttpError(404, 'Not found', `${what}: agent session not found.`);
  if (err instanceof RuntimeError && err.status !== undefined && err.status < 500) {
    return new HttpError(400, 'Rejected by runtime', `${what}: the agent runtime answered ${err.status}.`);
  }
  return new HttpError(502, 'Bad gateway', `${what}: ${(err as Error).message}`);
}

export async function handleControl(req: IncomingMessage, res: ServerResponse, path: string, deps: ControlDeps): Promise<void> {
  if (path === '/svc/health') {
    if (req.method !== 'GET' && req.method !== 'HEAD') throw new HttpError(405, 'Method not allowed', 'Use GET.');
    req.resume();
    sendJson(res, 200, await deps.health.body());
    return;
  }
  if (!bearerMatches(req.headers.authorization, deps.token)) {
    req.resume();
    throw unauthorized('The control surface needs Authorization: Bearer <SVC_TOKEN>.');
  }
  const route = routes[path];
  if (!route) {
    req.resume();
    throw new HttpError(404, 'Not found', `No control route ${path}.`);
  }
  if (req.method !== 'POST') {
    req.resume();
    throw new HttpError(405, 'Method not allowed', 'Use POST.');
  }
  await route(await readJsonBody(req), res, deps);
}

type Route = (body: unknown, res: ServerResponse, deps: ControlDeps) => Promise<void>;

const routes: Record<string, Route> = {
  '/svc/prompt': async (raw, res, deps) => {
    const body = parseBody(promptBody, raw);
    if (deps.runtime.state() !== 'running') throw runtimeUnavailable();
    let sessionId = body.session_id ?? (body.continue ? deps.sessions.last : undefined);
    const created = sessionId === undefined;
    try {
      sessionId ??= await deps.client.createSession();
      await deps.client.promptAsync(sessionId, body.text, { agent: deps.agentName, model: deps.agentModel });
    } catch (err) {
      throw runtimeFailure(err, 'prompt');
    }
    deps.sessions.last = sessionId;
    deps.logger.info({ session_id: sessionId, created }, 'prompt delivered');
    sendJson(res, 202, { session_id: sessionId, created });
  },

  '/svc/abort': async (raw, res, deps) => {
    const body = parseBody(abortBody, raw);
    const sessionId = body.session_id ?? deps.sessions.last;
    if (sessionId === undefined) throw new HttpError(409, 'Conflict', 'No agent session to abort: give session_id.');
    if (deps.runtime.state() !== 'running') throw runtimeUnavailable();
    try {
      await deps.client.abort(sessionId, deps.abortTimeoutMs);
      sendJson(res, 200, { session_id: sessionId, aborted: true, method: 'api' });
      return;
    } catch (err) {
      if (err instanceof RuntimeError && err.status !== undefined && err.status < 500) throw runtimeFailure(err, 'abort');
      // The runtime did not stop the run: take its whole process group down; the
      // supervisor starts a fresh runtime.
      deps.logger.warn({ session_id: sessionId, err: (err as Error).message }, 'abort failed; killing the runtime process group');
    }
    await deps.runtime.restart({ force: true });
    sendJson(res, 200, { session_id: sessionId, aborted: true, method: 'killed' });
  },

  '/svc/env': async (raw, res, deps) => {
    const body = parseBody(envBody, raw);
    deps.env.apply(body.set, body.unset);
    deps.logger.info({ set: Object.keys(body.set), unset: body.unset }, 'runtime environment updated');
    await deps.runtime.restart();
    sendJson(res, 200, { set: Object.keys(body.set), unset: body.unset, agent: deps.runtime.state() });
  },

  '/svc/checkpoint': async (raw, res, deps) => {
    const body = parseBody(checkpointBody, raw);
    if (!deps.checkpoint) throw new HttpError(409, 'Conflict', 'This sandbox has no session to checkpoint.');
    try {
      sendJson(res, 200, { saved: await deps.checkpoint(body.final === true) });
    } catch (err) {
      throw new HttpError(502, 'Bad gateway', `checkpoint: ${(err as Error).message}`);
    }
  },

  '/svc/claim': async (raw, res, deps) => {
    const body = parseBody(claimBody, raw);
    if (!deps.claim) throw new HttpError(409, 'Conflict', 'This sandbox is not a pool sandbox.');
    try {
      sendJson(res, 200, await deps.claim(body));
    } catch (err) {
      if (err instanceof RepoError && err.code === 'bad_ref') throw new HttpError(409, 'Conflict', err.message);
      if (err instanceof CredentialError || err instanceof RepoError) throw new HttpError(502, 'Bad gateway', err.message);
      throw err;
    }
  },

  '/svc/refresh': async (raw, res, deps) => {
    parseBody(emptyBody, raw);
    try {
      const r = await deps.refresh();
      sendJson(res, 200, { previous_commit: r.before, commit: r.after, agent: deps.runtime.state() });
    } catch (err) {
      if (err instanceof CredentialError) throw new HttpError(502, 'Bad gateway', err.message);
      if (err instanceof RepoError) {
        const status = err.code === 'git' ? 502 : 409;
        throw new HttpError(status, status === 409 ? 'Conflict' : 'Bad gateway', err.message);
      }
      throw err;
    }
  },
};
