import type { ProjectRecord } from '../../domain/project.js';
import type { SessionDeps } from './deps.js';
import { loadSession } from './handle.js';
import { modelChoiceOf, modelProblem, noModel } from './model-choice.js';
import { NO_SECRETS } from './sandbox-env.js';
import { findSession } from './service.js';

/**
 * A prompt no model can answer is refused at once (409 `no_model`, saying what to
 * configure and where) instead of reaching the runtime, which would fail a minute later
 * with "Cannot connect to API". The session itself starts either way.
 */
export async function assertPromptable(deps: SessionDeps, project: ProjectRecord, sessionId: string): Promise<void> {
  const v = await findSession(deps, project.project_id, sessionId);
  const { state } = await loadSession(deps.db, v.session_id);
  if (!state) return;
  const choice = await modelChoiceOf(deps, state, project);
  const secrets = choice.via === 'provider' && deps.projectSecrets ? await deps.projectSecrets(project.project_id) : NO_SECRETS;
  const problem = modelProblem(deps.config, choice, secrets.names);
  if (problem) throw noModel(problem);
}
