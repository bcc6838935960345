import { expect } from 'chai';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../../../lib/paths.js';
import { startScriptedModel, type ScriptedModel } from '../../support/scripted-model.js';
import { agentReady, waitForStatus, withSessionProject, type SessionProject } from '../../support/sessions.js';
import { skipUnlessCi } from '../../support/skip.js';
import { until } from '../../support/wait.js';

/**
 * A pool sandbox with the real runtime (docs/agentd.md "Warm-up"): warmed up before it
 * counts as ready without a model call reaching the upstream, the model key handed to the daemon's relay at the claim (the
 * runtime's provider keeps its warm state), and a repository with runtime config of its
 * own loaded after the claim (the warmed instance disposed).
 */
const opencode = path.join(projectRoot, 'node_modules', '.bin', 'opencode');
const UPSTREAM_KEY = 'sk-pool-warm-upstream';

interface Row {
  sandbox_id: string;
  state: string;
}

const readyRows = async (p: SessionProject) =>
  (await p.srv.db.db.rows<Row>({ text: 'SELECT sandbox_id::text, state FROM pool_sandboxes ORDER BY created_at', values: [] })).filter((r) => r.state === 'ready');

/** A prompt through the session's agent proxy, answered once the reply's text is in the runtime's history. */
async function ask(p: SessionProject, id: string, body: Record<string, unknown>): Promise<string> {
  const agent = `${p.sessions}/${id}/agent`;
  await agentReady(p.api, `${agent}/session`); // 503 while the runtime (re)loads and warms up
  const s = await p.api.post(`${agent}/session`, {});
  expect(s.status, JSON.stringify(s.body)).to.equal(200);
  const r = await p.api.post(`${agent}/session/${s.body.id}/message`, body);
  expect(r.status, JSON.stringify(r.body)).to.equal(200);
  return s.body.id as string;
}

describe('pool sandboxes warmed up with the real runtime (e2e)', function () {
  this.timeout(240_000);
  let model: ScriptedModel;

  before(async function () {
    if (!existsSync(opencode)) skipUnlessCi(this, `${opencode} is not installed`);
    model = await startScriptedModel({ key: UPSTREAM_KEY, script: () => ({ text: 'pool answer' }) });
  });
  after(async () => {
    await model?.close();
  });

  const env = () => ({
    SVC_AGENT_RUNTIME: opencode,
    SVC_SANDBOX_PROVIDER: 'process',
    SVC_SANDBOX_POOL_MAX: '1',
    SVC_LLM_UPSTREAM_URL: model.url,
    SVC_LLM_UPSTREAM_KEY: UPSTREAM_KEY,
    SVC_LLM_MODEL: 'scripted',
  });

  it('is ready only warm, with no model call upstream; after the claim the agent answers with the session key through the relay', () =>
    withSessionProject({ slug: 'warm', env: env() }, async (p) => {
      await p.repo.commit('main', { 'svc.toml': '[sandbox]\npool = 1\n' });
      expect((await p.api.get('/v1/projects/warm/manifest')).status).to.equal(200);
      await until(async () => (await readyRows(p)).length === 1, 'the pool to fill', { timeoutMs: 180_000 });
      const [pooled] = await readyRows(p);
      // Warmed (a throwaway turn ran) without one request reaching the model.
      expect(model.requests).to.deep.equal([]);
      const created = await p.api.post(p.sessions, {});
      expect(created.status).to.equal(201);
      const id = created.body.session.session_id as string;
      const s = await waitForStatus(p.api, `${p.sessions}/${id}`, ['running', 'failed'], 60_000);
      expect(s.sandbox.sandbox_id, JSON.stringify(s.error)).to.equal(pooled!.sandbox_id);

      const agentSession = await ask(p, id, { parts: [{ type: 'text', text: 'hello from the pool test' }] });
      const turns = model.requests.filter((r) => JSON.stringify(r.body).includes('hello from the pool test'));
      expect(turns.length).to.be.greaterThan(0);
      // The gateway called the upstream with its own key: the session's reached it through the relay.
      expect(turns.every((r) => r.headers.authorization === `Bearer ${UPSTREAM_KEY}`)).to.equal(true);
      expect(JSON.stringify(model.requests)).to.not.match(/svc-warmup-|relay-/);
      // The warm-up's session is gone: the agent's history holds the user's only.
      const listed = (await p.api.get(`${p.sessions}/${id}/agent/session`)).body as { id: string }[];
      expect(listed.map((x) => x.id)).to.deep.equal([agentSession]);
    }));

  it("loads a repository's own runtime config after the claim (the warmed instance is disposed)", () =>
    withSessionProject({ slug: 'warm', env: env() }, async (p) => {
      const agentConfig = { agent: { 'svc-repo-agent': { description: 'from the repo', mode: 'primary', prompt: 'REPO-AGENT-PROMPT-7f3a' } } };
      await p.repo.commit('main', { 'svc.toml': '[sandbox]\npool = 1\n', 'opencode.json': JSON.stringify(agentConfig) });
      expect((await p.api.get('/v1/projects/warm/manifest')).status).to.equal(200);
      await until(async () => (await readyRows(p)).length === 1, 'the pool to fill', { timeoutMs: 180_000 });
      const [pooled] = await readyRows(p);
      const id = (await p.api.post(p.sessions, {})).body.session.session_id as string;
      const s = await waitForStatus(p.api, `${p.sessions}/${id}`, ['running', 'failed'], 60_000);
      expect(s.sandbox.sandbox_id).to.equal(pooled!.sandbox_id);
      await ask(p, id, { agent: 'svc-repo-agent', parts: [{ type: 'text', text: 'use the repo agent' }] });
      const turn = model.requests.find((r) => JSON.stringify(r.body).includes('use the repo agent') && Array.isArray(r.body.tools));
      expect(turn, 'an agent turn for the prompt').to.not.equal(undefined);
      expect(JSON.stringify(turn!.body)).to.include('REPO-AGENT-PROMPT-7f3a');
    }));
});
