import { Router, type Request } from 'express';
import { declaredLength } from '../body.js';
import type { ApiDeps } from '../deps.js';
import { unauthorized } from '../auth.js';
import { checkGateway } from '../gateway.js';
import type { SandboxPrincipal } from '../../services/sessions/credentials.js';
import { FRAME_CONTENT_TYPE } from '../../lib/checkpoint-frame.js';
import { DomainError, retryLater } from '../../domain/errors.js';
import { CheckpointLimiter } from '../../services/sessions/checkpoint-limit.js';
import { sessionsOf } from './sessions.js';

/**
 * `PUT|GET /v1/projects/:projectId/sessions/:sessionId/wip` (pause and resume,
 * docs/sessions.md): a sandbox's daemon saves a checkpoint and its next sandbox reads it
 * back. Only the SVC_TOKEN of the session's own live sandbox, through that sandbox's own
 * gateway; every other credential is 401 (people see what was saved in the session's JSON).
 * Mounted before the PAT middleware and the JSON parser (the body is a binary frame).
 * Checkpoints are not activity: the idle sweep does not see them. A session's checkpoints are
 * rate limited (services/sessions/checkpoint-limit.ts: 429 with Retry-After), one at a time,
 * and streamed: the bundle goes to disk as it arrives, memory holds at most the capped
 * conversation archive.
 */
export function sessionWipRoutes(deps: ApiDeps): Router {
  const r = Router({ mergeParams: true });
  const limiter = new CheckpointLimiter();
  /** Sessions whose checkpoint is streaming in now (this process holds their gateway sockets). */
  const inFlight = new Set<string>();

  async function sandboxOf(req: Request): Promise<SandboxPrincipal> {
    const header = req.headers.authorization;
    const m = /^Bearer ([^\s]+)$/i.exec(String(header ?? '').trim());
    const sandbox = header === undefined ? null : await deps.guard.attempt(req, () => (m ? deps.services.auth.sandboxKey(m[1]!) : Promise.resolve(null)));
    if (!sandbox) throw unauthorized();
    checkGateway(req, { sandbox_id: sandbox.sandbox_id, provider: await deps.services.auth.sandboxProvider(sandbox.sandbox_id) });
    const params = req.params as Record<string, string>;
    const ref = String(params.projectId ?? '');
    const project = await deps.services.projects.byId(sandbox.project_id);
    // Another session's (or project's) key learns nothing: the same 401 as a bad key.
    if (!project || (ref.toLowerCase() !== project.project_id && ref !== project.slug)) throw unauthorized();
    if (String(params.sessionId ?? '').toLowerCase() !== sandbox.session_id) throw unauthorized();
    return sandbox;
  }

  r.put('/', async (req, res) => {
    const s = sessionsOf(deps);
    const who = await sandboxOf(req);
    // One checkpoint in flight per session: a second one while the first streams in is
    // refused before its body is read (api/body.ts closes the connection under it).
    if (inFlight.has(who.session_id)) throw retryLater('rate_limited', 'Too many requests', 'A checkpoint of this session is still being received: try again when it is done.', 5);
    const wait = limiter.take(who.session_id);
    if (wait) throw retryLater('rate_limited', 'Too many requests', `Checkpoints of this session come too fast: try again in ${wait} s.`, wait);
    const cap = s.checkpointBodyLimit();
    const declared = declaredLength(req);
    if (declared !== null && declared > cap) throw new DomainError('payload_too_large', 'Payload too large', `A checkpoint is at most ${cap} bytes.`);
    inFlight.add(who.session_id);
    try {
      res.json(await s.acceptCheckpoint(who, req));
    } finally {
      inFlight.delete(who.session_id);
    }
  });

  r.get('/', async (req, res) => {
    const s = sessionsOf(deps);
    const who = await sandboxOf(req);
    const v = req.query.runtime_version;
    if (v !== undefined && (typeof v !== 'string' || v.length > 200)) throw new DomainError('validation', 'Validation failed', 'runtime_version must be a short string.');
    const frame = await s.restoreFrame(who, typeof v === 'string' && v !== '' ? v : null);
    if (!frame) throw new DomainError('not_found', 'Not found', 'Nothing is saved for this session.');
    res.set('Cache-Control', 'no-store').type(FRAME_CONTENT_TYPE).send(frame);
  });

  return r;
}
