import type { ProjectRecord } from '../../domain/project.js';
import type { Session } from '../../domain/session/index.js';
import { sessionQueries } from '../../sql/queries/sessions.js';
import type { SessionDeps } from './deps.js';
import { gatewayConfigured, gatewayModels, modelChoiceOf } from './model-choice.js';

/**
 * What a sandbox's agent needs beyond the spec's SVC_* table: its model and the gateway
 * it reaches it through, and the git identity its commits carry.
 *
 *  - SVC_LLM_BASE_URL (= `${SVC_API_URL}/llm`) and SVC_LLM_API_KEY, the sandbox's own
 *    gateway key (with the spec's SVC_YOLO_* aliases), only when the server has an
 *    upstream. The upstream's key never enters a sandbox.
 *  - SVC_AGENT_MODEL: `svc/<model>` for the gateway, `provider/model` otherwise; and
 *    SVC_LLM_MODELS, the names the daemon declares for its `svc` provider.
 *  - GIT_AUTHOR_* and GIT_COMMITTER_*: `"<user name> (svc agent)" <agent+<session id>@<public host>>`,
 *    the user the session acts for (a scheduled trigger's: the account's owner); the user's
 *    own address is never pushed to a remote.
 */
export async function agentEnv(
  deps: Pick<SessionDeps, 'db' | 'repos' | 'config'>,
  i: { session: Session; project: ProjectRecord; apiUrl: string; llmKey: string },
): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  const choice = await modelChoiceOf(deps, i.session, i.project);
  if (choice.runtimeModel) out.SVC_AGENT_MODEL = choice.runtimeModel;
  if (gatewayConfigured(deps.config)) {
    const base = `${i.apiUrl.replace(/\/+$/, '')}/llm`;
    const models = gatewayModels(deps.config);
    if (choice.via === 'gateway' && choice.model && !models.includes(choice.model)) models.push(choice.model);
    Object.assign(out, { SVC_LLM_BASE_URL: base, SVC_LLM_API_KEY: i.llmKey, SVC_YOLO_URL: base, SVC_YOLO_API_KEY: i.llmKey, SVC_LLM_MODELS: models.join(',') });
  }
  const user = await deps.db.one<{ name: string; email: string }>(sessionQueries.userIdentity(i.session.created_by));
  const name = gitIdentityName(user?.name || user?.email.split('@')[0] || 'svc');
  const email = `agent+${i.session.session_id}@${publicHost(deps.config.SVC_PUBLIC_URL, i.apiUrl)}`;
  Object.assign(out, { GIT_AUTHOR_NAME: name, GIT_AUTHOR_EMAIL: email, GIT_COMMITTER_NAME: name, GIT_COMMITTER_EMAIL: email });
  return out;
}

/** `<name> (svc agent)`, with what git refuses in an identity (`<`, `>`, control characters) removed. */
export function gitIdentityName(userName: string): string {
  // eslint-disable-next-line no-control-regex
  const clean = userName.replace(/[<>\u0000-\u001f\u007f]/g, '').trim().slice(0, 200) || 'svc';
  return `${clean} (svc agent)`;
}

/** The server's public host name: SVC_PUBLIC_URL's, else the API URL's, else localhost. */
export function publicHost(publicUrl: string | undefined, apiUrl: string): string {
  for (const u of [publicUrl, apiUrl]) {
    try {
      if (u) return new URL(u).hostname.replace(/^\[|\]$/g, '') || 'localhost';
    } catch {
      /* not a URL: the next one */
    }
  }
  return 'localhost';
}
