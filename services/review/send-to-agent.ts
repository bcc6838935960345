import { DomainError, isDomainError, type ErrorReason } from '../../domain/errors.js';
import { isOwnBranch } from '../../domain/stack-branches.js';
import { parseChangeRequestEvent, streamIdOf, type ChangeRequest } from '../../domain/change-request/index.js';
import type { ProjectRecord } from '../../domain/project.js';
import { readStream } from '../../infra/event-store.js';
import { findCr, refreshCr, type CrDeps } from '../change-requests/service.js';
import { handleCommand } from '../change-requests/handle.js';
import { controlCall, findSession, restartSession, type SessionDeps, type SessionView } from '../sessions/service.js';
import { assertPromptable } from '../sessions/prompt-guard.js';
import { pause } from '../sessions/deps.js';
import { assertMay } from '../tokens/agent-policy.js';
import type { Principal } from '../tokens/service.js';
import { collectFeedback, commentFeedback, feedbackPrompt, type FeedbackSource } from './feedback.js';
import { withReviewRows } from './comments.js';
import { nowOf } from '../../lib/clock.js';

/**
 * "Send to agent": the CR's feedback items (unresolved comments, and
 * whatever other sources are wired in) go to the CR's origin session as one prompt, only
 * when the CR's head is that session's branch. A running session gets it at once, queued
 * behind a prompt it is running (its last agent conversation); a stopped one is restarted
 * (the session service's restart, under the account's cap: 429) and gets it once its agent
 * is ready. Each send is a round (`ChangeRequestSentToAgent`); the agent answers once, as
 * one comment (services/review/comments.ts links it to the round).
 */
export interface ReviewDeps extends CrDeps {
  sessions?: SessionDeps | undefined;
  /** Sources of feedback beyond the comments (the checks feature adds its failures here). */
  feedbackSources?: FeedbackSource[];
  /** `[review] max_agent_rounds` of the manifest in force (default 3): bounds automatic sends. */
  maxAgentRounds?: (project: ProjectRecord) => Promise<number>;
}

export interface SentRound {
  round: number;
  session_id: string;
  items: { kind: string; ref: string }[];
  head_sha: string | null;
  delivery: 'prompted' | 'restarted' | 'queued';
  prompt: string;
}

export const DEFAULT_MAX_AGENT_ROUNDS = 3;

const coded = (code: 'conflict' | 'unavailable', reason: ErrorReason, machine: string, message: string) => new DomainError(code, reason, message, { code: machine });
const now = (deps: Pick<CrDeps, 'now'>) => nowOf(deps);

/** The rounds already sent, from the CR's stream (and whether its origin ever was a session). */
async function historyOf(deps: CrDeps, cr: ChangeRequest) {
  const events = (await readStream(deps.db, streamIdOf(cr.cr_id))).map(parseChangeRequestEvent);
  const rounds = events.filter((e) => e.type === 'ChangeRequestSentToAgent').map((e) => e.data as { round: number; automatic: boolean });
  const opened = events.find((e) => e.type === 'ChangeRequestOpened');
  const everOrigin = opened?.type === 'ChangeRequestOpened' ? opened.data.origin_session_id : null;
  return { rounds, everOrigin };
}

export async function sendToAgent(
  deps: ReviewDeps,
  project: ProjectRecord,
  ref: string,
  who: Principal,
  opts: { automatic?: boolean } = {},
): Promise<SentRound> {
  assertMay(who, { kind: 'cr.review' });
  const s = deps.sessions;
  if (!s) throw new DomainError('unavailable', 'Sessions unavailable', 'This server runs no session service.');
  const cr = await refreshCr(deps, project, await findCr(deps.db, project.project_id, ref), who.user_id);
  if (cr.status !== 'open') throw new DomainError('conflict', 'Conflict', `Change request #${cr.number} is ${cr.status}; only an open one is sent to its agent.`, { status: cr.status });
  const { rounds, everOrigin } = await historyOf(deps, cr);
  const originId = cr.origin_session_id ?? everOrigin;
  if (!originId) throw coded('conflict', 'No origin session', 'no_origin_session', `Change request #${cr.number} was not opened by a session; there is no agent to send it to.`);
  let session: SessionView;
  try {
    session = await findSession(s, project.project_id, originId);
  } catch (err) {
    if (isDomainError(err) && err.code === 'not_found') {
      throw coded('conflict', 'Origin session gone', 'origin_session_gone', `The session that opened change request #${cr.number} was removed; open a new session to work on it.`);
    }
    throw err;
  }
  // Its session branch, or one of its stack branches (the prompt names the branch to work on).
  if (!isOwnBranch(session.branch, cr.head_ref)) {
    throw coded('conflict', 'Head is not the session branch', 'head_not_session_branch', `Change request #${cr.number}'s head is '${cr.head_ref}', not its session's branch '${session.branch}'.`);
  }
  if (opts.automatic) {
    const max = deps.maxAgentRounds ? await deps.maxAgentRounds(project) : DEFAULT_MAX_AGENT_ROUNDS;
    if (rounds.filter((r) => r.automatic).length >= max) {
      throw coded('conflict', 'Too many rounds', 'max_agent_rounds', `Change request #${cr.number} was sent to its agent automatically ${max} times ([review] max_agent_rounds); a person takes it from here.`);
    }
  }
  const items = await collectFeedback([commentFeedback, ...(deps.feedbackSources ?? [])], { db: deps.db, project, cr });
  if (items.length === 0) throw coded('conflict', 'Nothing to send', 'nothing_to_send', `Change request #${cr.number} has no unresolved comments or failures to send.`);
  const prompt = feedbackPrompt(cr, items);
  // A prompt no model can answer is refused before anything restarts (409 no_model).
  await assertPromptable(s, project, session.session_id);
  const delivery = await deliver(s, project, session, prompt, who.user_id);
  const round = rounds.length + 1;
  const sent = { round, session_id: session.session_id, items: items.map(({ kind, ref }) => ({ kind, ref })), head_sha: cr.head_commit_sha, delivery };
  await handleCommand(
    deps,
    project.project_id,
    cr.cr_id,
    () => ({
      type: 'SendChangeRequestToAgent',
      data: { ...sent, comment_ids: items.filter((i) => i.kind === 'comment').map((i) => i.ref), automatic: opts.automatic ?? false },
      meta: { actor: who.user_id, now: now(deps) },
    }),
    withReviewRows(project.project_id),
  );
  return { ...sent, prompt };
}

/** Prompts the session now, or restarts it and prompts it once its agent is ready (in the background). */
async function deliver(s: SessionDeps, project: ProjectRecord, session: SessionView, text: string, actor: string): Promise<SentRound['delivery']> {
  if (session.status === 'running' && session.agent_state === 'ready') {
    // `continue`: the daemon's last agent conversation, so the prompt queues behind a running one.
    await controlCall(s, project.project_id, session.session_id, '/svc/prompt', { text, continue: true });
    return 'prompted';
  }
  let delivery: SentRound['delivery'] = 'queued';
  if (session.status !== 'running' && session.status !== 'provisioning') {
    await restartSession(s, project.project_id, session.session_id, actor);
    delivery = 'restarted';
  }
  void promptWhenReady(s, project, session.session_id, text).catch((err: Error) =>
    s.logger.warn({ session_id: session.session_id, err: err.message }, 'review feedback not delivered'),
  );
  return delivery;
}

async function promptWhenReady(s: SessionDeps, project: ProjectRecord, sessionId: string, text: string): Promise<void> {
  const deadline = performance.now() + (s.config.SVC_SESSION_PROVISION_TIMEOUT_SECONDS + 120) * 1000;
  while (performance.now() < deadline && !s.stopping?.aborted) {
    const v = await findSession(s, project.project_id, sessionId);
    if (v.status === 'failed' || v.agent_state === 'error') throw new Error(`the session is ${v.status} (agent ${v.agent_state})`);
    if (v.status === 'running' && v.agent_state === 'ready') {
      await controlCall(s, project.project_id, sessionId, '/svc/prompt', { text, continue: true });
      s.logger.info({ session_id: sessionId }, 'review feedback delivered after restart');
      return;
    }
    await pause(500, s.stopping);
  }
  throw new Error('the session did not become ready in time');
}
