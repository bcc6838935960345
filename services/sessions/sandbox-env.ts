import type { Session } from '../../domain/session/index.js';
import type { ProjectRecord } from '../../domain/project.js';
import type { SessionDeps } from './deps.js';

/** The project's secrets as they enter a sandbox (services/secrets/sandbox-env.ts, when present). */
export interface ProjectSecrets {
  env: Record<string, string>;
  names: string[];
  revision: number;
}

export const NO_SECRETS: ProjectSecrets = { env: {}, names: [], revision: 0 };

/**
 * The spec's "Injected sandbox environment", exactly: the SVC_* table plus the project's
 * secrets. Secrets go in first so that no secret can shadow an SVC_ variable (the
 * secrets API refuses that prefix anyway). Not injected: SVC_WORKSPACE (baked into the
 * image) and any static git token (the daemon fetches credentials just in time).
 */
export function sandboxEnv(i: {
  session: Session;
  project: ProjectRecord;
  repoUrl: string;
  apiUrl: string;
  /** SVC_DASHBOARD_URL: the links `svc cr open` prints are ones the person can open. */
  dashboardUrl?: string | undefined;
  serviceKey: string;
  cliToken: string;
  secrets: ProjectSecrets;
  /** The first prompt is delivered by the session's first sandbox only, never on restart. */
  withPrompt: boolean;
  /** The agent's model, gateway and git identity (agent-env.ts). */
  agent?: Record<string, string>;
}): Record<string, string> {
  const s = i.session;
  const prompt = i.withPrompt && s.prompt ? s.prompt : null;
  return {
    ...i.secrets.env,
    SVC_PROJECT_ID: s.project_id,
    SVC_SESSION_ID: s.session_id,
    SVC_BRANCH_NAME: s.branch,
    SVC_HEAD_REF: s.branch,
    SVC_REPO_URL: i.repoUrl,
    SVC_DEFAULT_BRANCH: i.project.default_branch,
    SVC_BASE_REF: s.base_ref,
    SVC_SERVICE_PORT: '8000',
    SVC_API_URL: i.apiUrl,
    ...(i.dashboardUrl ? { SVC_DASHBOARD_URL: i.dashboardUrl } : {}),
    SVC_AGENT_NAME: s.agent,
    ...(s.model ? { SVC_AGENT_MODEL: s.model } : {}),
    ...i.agent,
    ...(prompt ? { SVC_INITIAL_PROMPT: prompt, SVC_BOOTSTRAP_AGENT_SESSION: '1' } : {}),
    SVC_PROJECT_AUTO_CLONE: '1',
    SVC_PROJECT_SECRET_NAMES: i.secrets.names.join(','),
    SVC_PROJECT_SECRETS_REVISION: String(i.secrets.revision),
    SVC_TOKEN: i.serviceKey,
    SVC_CLI_TOKEN: i.cliToken,
    SVC_EXECUTOR_TOKEN: i.cliToken,
  };
}

/**
 * The URL a sandbox clones, fetches and pushes: this server's smart HTTP, for a remote
 * repository too (its relay, infra/git/relay.ts): the remote's credentials never enter a
 * sandbox, and every push is checked before the remote sees it; and for a `file://` one
 * (served from the server's view of it, docs/git-http.md "Relay"): no repository path
 * enters a sandbox, and none of the repository's hooks runs for its pushes. The server's
 * URL comes from the configuration, never the repo_url stored at creation (a row written
 * before SVC_PUBLIC_HOSTS may hold a Host header's choice, and sandboxes send credentials to it).
 */
export function repoUrlOf(deps: Pick<SessionDeps, 'apiUrl'>, project: ProjectRecord): string {
  return `${deps.apiUrl().replace(/\/v1\/?$/, '')}/git/${project.project_id}.git`;
}
