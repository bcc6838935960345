import { expect } from 'chai';
import { fold, type SessionEvent } from '../../../domain/session/index.js';
import { sandboxEnv } from '../../../services/sessions/sandbox-env.js';
import type { ProjectRecord } from '../../../domain/project.js';

/** The spec's "Injected sandbox environment" table, exactly (no LLM gateway here). */
const ALWAYS = [
  'SVC_PROJECT_ID', 'SVC_SESSION_ID', 'SVC_BRANCH_NAME', 'SVC_REPO_URL', 'SVC_DEFAULT_BRANCH', 'SVC_BASE_REF',
  'SVC_SERVICE_PORT', 'SVC_API_URL', 'SVC_AGENT_NAME', 'SVC_PROJECT_AUTO_CLONE', 'SVC_PROJECT_SECRET_NAMES',
  'SVC_PROJECT_SECRETS_REVISION', 'SVC_TOKEN', 'SVC_CLI_TOKEN', 'SVC_EXECUTOR_TOKEN', 'SVC_HEAD_REF',
];

const sid = '00000000-0000-4000-8000-000000000001';
const created = (over: { prompt?: string | null; model?: string | null; base_ref?: string } = {}): SessionEvent => ({
  type: 'SessionCreated',
  data: {
    session_id: sid,
    account_id: '00000000-0000-4000-8000-000000000002',
    project_id: '00000000-0000-4000-8000-000000000003',
    base_ref: over.base_ref ?? 'develop',
    agent: 'build',
    model: over.model ?? null,
    prompt: over.prompt ?? null,
    trigger: null,
    created_by: '00000000-0000-4000-8000-00000000000a',
    created_at: '2026-01-01T00:00:00.000Z',
  },
});
const project = { project_id: '00000000-0000-4000-8000-000000000003', default_branch: 'main' } as ProjectRecord;
const base = { project, repoUrl: 'https://git.example/r.git', apiUrl: 'http://127.0.0.1:9/v1', serviceKey: 'svc_sbx_k', cliToken: 'svc_pat_t' };

describe('the injected sandbox environment', () => {
  it('has exactly the spec\'s variables, with their values', () => {
    const env = sandboxEnv({ ...base, session: fold([created()])!, secrets: { env: {}, names: [], revision: 0 }, withPrompt: true });
    expect(Object.keys(env).sort()).to.deep.equal([...ALWAYS].sort());
    expect(env).to.include({
      SVC_SESSION_ID: sid, SVC_BRANCH_NAME: sid, SVC_HEAD_REF: sid, SVC_DEFAULT_BRANCH: 'main', SVC_BASE_REF: 'develop',
      SVC_SERVICE_PORT: '8000', SVC_API_URL: 'http://127.0.0.1:9/v1', SVC_AGENT_NAME: 'build', SVC_PROJECT_AUTO_CLONE: '1',
      SVC_PROJECT_SECRET_NAMES: '', SVC_PROJECT_SECRETS_REVISION: '0', SVC_TOKEN: 'svc_sbx_k', SVC_CLI_TOKEN: 'svc_pat_t', SVC_EXECUTOR_TOKEN: 'svc_pat_t',
    });
  });

  it('adds SVC_DASHBOARD_URL when the server knows where people open the dashboard (never the sandbox gateway)', () => {
    const env = sandboxEnv({ ...base, dashboardUrl: 'https://svc.example.com', session: fold([created()])!, secrets: { env: {}, names: [], revision: 0 }, withPrompt: true });
    expect(env.SVC_DASHBOARD_URL).to.equal('https://svc.example.com');
  });

  it('adds the model and the first prompt when there are ones; the prompt only for the first sandbox', () => {
    const s = fold([created({ prompt: 'fix it', model: 'anthropic/x' })])!;
    const first = sandboxEnv({ ...base, session: s, secrets: { env: {}, names: [], revision: 0 }, withPrompt: true });
    expect(first).to.include({ SVC_AGENT_MODEL: 'anthropic/x', SVC_INITIAL_PROMPT: 'fix it', SVC_BOOTSTRAP_AGENT_SESSION: '1' });
    const later = sandboxEnv({ ...base, session: s, secrets: { env: {}, names: [], revision: 0 }, withPrompt: false });
    expect(later).to.not.have.any.keys('SVC_INITIAL_PROMPT', 'SVC_BOOTSTRAP_AGENT_SESSION');
  });

  it('carries the project\'s secrets, which can never shadow an SVC_ variable', () => {
    const env = sandboxEnv({
      ...base,
      session: fold([created()])!,
      secrets: { env: { OPENAI_API_KEY: 'k', SVC_TOKEN: 'evil' }, names: ['OPENAI_API_KEY'], revision: 7 },
      withPrompt: true,
    });
    expect(env).to.include({ OPENAI_API_KEY: 'k', SVC_TOKEN: 'svc_sbx_k', SVC_PROJECT_SECRET_NAMES: 'OPENAI_API_KEY', SVC_PROJECT_SECRETS_REVISION: '7' });
  });
});
