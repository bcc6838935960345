import type { ProjectRecord } from '../../domain/project.js';
import type { SessionDeps } from './deps.js';
import { loadSession } from './handle.js';
import { modelChoiceOf, modelProblem, noModel } from './model-choice.js';
import { NO_SECRETS } from './sandbox-env.js';

/**
 * A prompt no model can answer is refused at once (409 `no_model`, saying what to
 * configure and where) instead of reaching the runtime, which would fail a minute later
 * with "Cannot connect to API". Sessions themselves start either way.
 */
export async function assertModelAvailable(deps: SessionDeps, project: ProjectRecord, sessionModel: string | null): Promise<void> {
  const choice = await modelChoiceOf(deps, { model: sessionModel }, project);
  const secrets = choice.via === 'provider' && deps.projectSecrets ? await deps.projectSecrets(project.project_id) : NO_SECRETS;
  const problem = modelProblem(deps.config, choice, secrets.names);
  if (problem) throw noModel(problem);
}

/** For `POST …/prompt`: a session of another project, or none, is left to the route's own 404. */
export async function assertPromptable(deps: SessionDeps, project: ProjectRecord, sessionId: string): Promise<void> {
  const { state } = await loadSession(deps.db, sessionId.toLowerCase());
  if (!state || state.removed || state.project_id !== project.project_id) return;
  await assertModelAvailable(deps, project, state.model);
}
