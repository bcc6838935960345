import { randomUUID } from 'node:crypto';
import type { SandboxSpec } from '../../../infra/sandbox/port.js';

/**
 * A provider test's sandbox: project `proj-1`, the session on `branch` of the test's git
 * server, the daemon pointed at the fake API with `token`, and `runtime` as the agent.
 */
export function sandboxSpec(o: {
  token: string;
  branch: string;
  repoUrl: string;
  apiUrl: string;
  runtime: string;
  label: string;
  extra?: Record<string, string>;
}): SandboxSpec {
  return {
    sandboxId: randomUUID(),
    sessionId: o.branch,
    projectId: 'proj-1',
    accountId: 'acct-1',
    labels: { 'svc.test': o.label },
    env: {
      SVC_TOKEN: o.token,
      SVC_PROJECT_ID: 'proj-1',
      SVC_SESSION_ID: o.branch,
      SVC_BRANCH_NAME: o.branch,
      SVC_REPO_URL: o.repoUrl,
      SVC_API_URL: o.apiUrl,
      SVC_PROJECT_AUTO_CLONE: '1',
      SVC_SERVICE_PORT: '8000',
      SVC_AGENT_RUNTIME: o.runtime,
      SVC_AGENT_RESTART_BACKOFF_MS: '100',
      SVC_AGENT_STOP_GRACE_MS: '2000',
      ...o.extra,
    },
  };
}
