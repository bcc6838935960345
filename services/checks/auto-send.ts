import { isDomainError } from '../../domain/errors.js';
import type { ProjectRecord } from '../../domain/project.js';
import type { SessionDeps } from '../sessions/deps.js';
import { sendToAgent } from '../review/send-to-agent.js';
import type { Principal } from '../tokens/service.js';
import { findCr } from '../change-requests/service.js';
import { checksInForce } from './config.js';
import type { ChecksDeps } from './deps.js';
import { checkFeedback } from './feedback.js';
import type { FeedbackSource } from '../review/feedback.js';

/**
 * `[review] send_failures_to_agent = true`: a check that failed or errored on an agent's CR
 * is sent to its origin session at once, as "Send to agent" would (the failure with the
 * unresolved comments, one prompt), marked automatic and bounded by `max_agent_rounds`
 * (past it a person takes over). It acts for the person who opened the CR (the session's
 * creator); a refusal (no origin session, its head not the session branch, rounds spent,
 * no model) is logged, never an error of the check.
 */
export async function sendFailureAutomatically(
  deps: ChecksDeps,
  sessions: SessionDeps,
  project: ProjectRecord,
  crId: string,
  /** What is sent: the failing checks (default), or another source's items (the merge queue's conflict). */
  sources: FeedbackSource[] = [checkFeedback],
): Promise<'sent' | 'off' | string> {
  const cfg = await checksInForce(deps.db, project.project_id);
  if (!cfg.review.send_failures_to_agent) return 'off';
  const cr = await findCr(deps.db, project.project_id, crId);
  if (!cr.origin_session_id || cr.status !== 'open') return 'not an agent\'s open CR';
  const who: Principal = {
    token_id: 'checks',
    user_id: cr.created_by,
    email: '',
    user_name: '',
    project_id: null,
    grade: 'person',
    sandbox_id: null,
    session_id: null,
  };
  try {
    const round = await sendToAgent(
      { ...deps, sessions, feedbackSources: sources, maxAgentRounds: async () => cfg.review.max_agent_rounds },
      project,
      cr.cr_id,
      who,
      { automatic: true },
    );
    deps.logger.info({ cr_id: cr.cr_id, round: round.round, delivery: round.delivery }, 'check failure sent to the agent');
    return 'sent';
  } catch (err) {
    const code = isDomainError(err) ? String(err.details.code ?? err.code) : 'error';
    deps.logger.info({ cr_id: cr.cr_id, code, err: (err as Error).message }, 'check failure not sent to the agent');
    return code;
  }
}
