import { expect } from 'chai';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { promptEstimate } from '../../../services/llm/ledger.js';
import { runSvc, sandbox } from '../../cli/helpers.js';
import { client } from '../../support/http.js';
import { startScriptedModel } from '../../support/scripted-model.js';
import { agentReady, waitForStatus, withSessionProject, type SessionProject } from '../../support/sessions.js';
import { until } from '../../support/wait.js';
import { mergeChange } from '../manifest/support.js';

/**
 * Budgets a person sets (docs/models.md "Budgets a person sets"), through the gateway and
 * the scripted model: a project over its budget is refused model calls, new sessions and
 * trigger fires (429 naming the budget, no Retry-After), its channel hears 80% once, and a
 * person raising the budget lets work continue. Attacked by the agent it holds (its own
 * credentials cannot change it) and by parallel calls (reservations hold the limit).
 */
const K = 'upstream-key-K-project-budgets';
const UNCAPPED = { SVC_SANDBOX_MAX_REQUESTS: '64', SVC_SANDBOX_MAX_REQUEST_RATE: '500' };
const TRIGGER = `[[triggers]]
slug = "nightly"
schedule = "0 3 * * *"
prompt = "Clean up"
enabled = true
`;

const chat = (base: string, key: string, body: unknown) =>
  fetch(`${base}/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` }, body: JSON.stringify(body) });

async function sandboxOf(p: SessionProject): Promise<{ id: string; key: string; base: string; cli: string; api: string }> {
  const created = await p.api.post(p.sessions, {});
  expect(created.status, JSON.stringify(created.body)).to.equal(201);
  const id = created.body.session.session_id as string;
  await waitForStatus(p.api, `${p.sessions}/${id}`, ['running']);
  const env = (await agentReady(p.api, `${p.sessions}/${id}/agent/fake/state`)).body.env as Record<string, string>;
  return { id, key: env.SVC_LLM_API_KEY!, base: env.SVC_LLM_BASE_URL!, cli: env.SVC_CLI_TOKEN!, api: new URL(env.SVC_API_URL!).origin };
}

/** A chat webhook on 127.0.0.1: the texts it was posted. */
async function webhook() {
  const texts: string[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      texts.push((JSON.parse(body) as { text: string }).text);
      res.writeHead(200).end('ok');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/services/T/B/x`, texts, close: () => new Promise<void>((r) => server.close(() => r())) };
}

const budgetEvents = (p: SessionProject, projectId: string) =>
  p.srv.db.db.rows<{ type: string; data: Record<string, unknown> }>({ text: 'SELECT type, data FROM events WHERE stream_id = $1 ORDER BY global_position', values: [`budgets-${projectId}`] });

const put = (api: ReturnType<typeof client>, path: string, body: unknown) => api.call('PUT', path, body);

describe('budgets a person sets (project and account scopes of the model ledger)', function () {
  this.timeout(180_000);

  it('a project over its budget: the next model call, session and trigger fire are refused naming it; its channel hears 80% once; a person raises it and work continues', async () => {
    // The reported prompt is larger than the gateway's estimate, as it can be: the third call takes the project past its limit.
    const model = await startScriptedModel({ key: K, script: [], plain: () => ({ text: 'ok', usage: { prompt_tokens: 60, completion_tokens: 40 } }) });
    const hook = await webhook();
    try {
      await withSessionProject({ slug: 'pb1', env: { SVC_LLM_UPSTREAM_URL: model.url, SVC_LLM_UPSTREAM_KEY: K, SVC_LLM_MODEL: 'scripted', SVC_CHANNELS_ALLOW_HTTP: '1', SVC_SCHEDULER_INTERVAL_MS: '200', ...UNCAPPED } }, async (p) => {
        const project = `/v1/projects/pb1`;
        const projectId = (await p.api.get(project)).body.project.project_id as string;
        await mergeChange(p, 'trigger', { 'svc.toml': TRIGGER });
        await until(async () => (await p.api.get(`${project}/triggers`)).body.triggers?.length === 1, 'the trigger synced');
        expect((await p.api.post(`${project}/channels`, { kind: 'slack', webhook_url: hook.url })).status).to.equal(201);
        const s = await sandboxOf(p);

        expect((await p.api.get(`${project}/budget`)).body).to.deep.equal({ budget: null });
        const set = await put(p.api, `${project}/budget`, { unit: 'tokens', period: 'day', limit: 240 });
        expect(set.status, JSON.stringify(set.body)).to.equal(200);
        expect(set.body.budget).to.include({ scope: 'project', scope_id: projectId, unit: 'tokens', period: 'day', limit: 240, limit_in_force: 240, spent: 0, reserved: 0, currency: null });

        const body = { model: 'scripted', messages: [{ role: 'user', content: 'hi' }] };
        const estimate = promptEstimate(body);
        // 100, then 200 (83%: the notice), then the 40 left less the prompt's estimate as output: past 100%.
        for (let i = 0; i < 3; i++) {
          const r = await chat(s.base, s.key, body);
          expect(r.status, await r.clone().text()).to.equal(200);
        }
        const third = model.requests.filter((r) => r.path === '/v1/chat/completions')[2]!;
        expect(third.body.max_tokens, 'the last call was granted only what the budget left').to.equal(240 - 200 - estimate);
        const spent = 200 + 60 + (240 - 200 - estimate);
        expect((await p.api.get(`${project}/budget`)).body.budget).to.include({ spent, reserved: 0 });

        // The next model call: 429 in OpenAI's shape, the budget named, no Retry-After.
        const call = await chat(s.base, s.key, body);
        expect(call.status).to.equal(429);
        expect(call.headers.get('retry-after')).to.equal(null);
        const err = ((await call.json()) as { error: { code: string; message: string } }).error;
        expect(err.code).to.equal('project_budget_exceeded');
        expect(err.message).to.include("The project 'pb1'").and.include('240 tokens per UTC day');
        expect(model.requests.filter((r) => r.path === '/v1/chat/completions')).to.have.length(3);

        // The next session and the next trigger fire: 429 project_budget_exceeded, the budget in the body.
        for (const [what, res] of [
          ['session', await p.api.post(p.sessions, {})],
          ['trigger fire', await p.api.post(`${project}/triggers/nightly/fire`, {})],
          ['trigger fire again', await p.api.post(`${project}/triggers/nightly/fire`, {})],
        ] as const) {
          expect(res.status, `${what}: ${JSON.stringify(res.body)}`).to.equal(429);
          expect(res.headers.get('retry-after'), what).to.equal(null);
          expect(res.body).to.include({ error: 'Project budget exceeded', code: 'project_budget_exceeded' });
          expect(res.body.budget).to.deep.equal({ scope: 'project', scope_id: projectId, unit: 'tokens', period: 'day', limit: 240, currency: null });
        }
        // The scheduler's ticks past the budget: each refused, on the fire history only.
        const db = p.srv.db.db;
        for (let i = 1; i <= 3; i++) {
          await db.run({ text: "UPDATE triggers SET next_fire_at = now() - interval '1 second'", values: [] });
          await until(async () => (await db.rows({ text: "SELECT 1 FROM trigger_fires WHERE kind = 'schedule'", values: [] })).length === i, `scheduled tick ${i}`);
        }
        await until(async () => (await db.rows({ text: "SELECT 1 FROM trigger_fires WHERE outcome = 'pending'", values: [] })).length === 0, 'the ticks settled');
        const fires = (await p.api.get(`${project}/triggers/nightly`)).body.trigger.fires as Array<{ kind: string; outcome: string }>;
        expect(fires.map((f) => [f.kind, f.outcome])).to.have.deep.members([
          ['manual', 'budget exceeded'],
          ['manual', 'budget exceeded'],
          ['schedule', 'budget exceeded'],
          ['schedule', 'budget exceeded'],
          ['schedule', 'budget exceeded'],
        ]);

        // Its channel: 80% once, then 100%.
        await until(() => hook.texts.some((t) => t.includes('has spent its model budget')), 'the 100% notice');
        const warned = hook.texts.filter((t) => t.includes('has used 80% of its model budget'));
        expect(warned, JSON.stringify(hook.texts)).to.deep.equal(['The project pb1 has used 80% of its model budget: 200 tokens of 240 tokens per UTC day.']);

        // Events: the change, each crossing once, each refusal once per subject (the trigger fired twice).
        const events = await budgetEvents(p, projectId);
        expect(events.map((e) => [e.type, e.data.threshold ?? e.data.subject ?? e.data.limit])).to.deep.equal([
          ['BudgetSet', 240],
          ['BudgetThresholdCrossed', 80],
          ['BudgetThresholdCrossed', 100],
          ['BudgetRefused', 'model calls'],
          ['BudgetRefused', 'sessions'],
          ['BudgetRefused', 'trigger nightly'],
        ]);
        const triggerLog = await p.srv.db.db.rows<{ type: string }>({ text: 'SELECT type FROM events WHERE stream_id = $1', values: [`triggers-${projectId}`] });
        expect(triggerLog.map((e) => e.type), 'refused fires are the budget’s one refusal, not a fire each').to.not.include('TriggerFired');

        // A person raises it: work continues.
        expect((await put(p.api, `${project}/budget`, { unit: 'tokens', period: 'day', limit: 100_000 })).body.budget).to.include({ limit: 100_000, spent });
        expect((await chat(s.base, s.key, body)).status).to.equal(200);
        const again = await p.api.post(p.sessions, {});
        expect(again.status, JSON.stringify(again.body)).to.equal(201);
        expect((await p.api.post(`${project}/triggers/nightly/fire`, {})).status).to.equal(202);
        expect((await budgetEvents(p, projectId)).filter((e) => e.type === 'BudgetThresholdCrossed'), 'a raised budget far from 80%: no notice').to.have.length(2);
      });
    } finally {
      await hook.close();
      await model.close();
    }
  });

  it('an agent credential cannot change a budget (403), its project’s or its account’s; a person’s project token cannot change the account’s; another tenant cannot read or change either', async () => {
    const model = await startScriptedModel({ key: K, script: [], plain: () => ({ text: 'ok', usage: { prompt_tokens: 8, completion_tokens: 8 } }) });
    try {
      await withSessionProject({ slug: 'pb2', env: { SVC_LLM_UPSTREAM_URL: model.url, SVC_LLM_UPSTREAM_KEY: K, SVC_LLM_MODEL: 'scripted', ...UNCAPPED } }, async (p) => {
        const accountId = (await p.api.get('/v1/accounts/me')).body.account.account_id as string;
        expect((await put(p.api, '/v1/projects/pb2/budget', { unit: 'tokens', period: 'month', limit: 1000 })).status).to.equal(200);
        const s = await sandboxOf(p);
        const agent = client(s.api, s.cli);
        expect((await agent.get('/v1/projects/pb2/budget')).body.budget, 'an agent may read it').to.include({ limit: 1000 });
        for (const [path, body] of [
          ['/v1/projects/pb2/budget', { unit: 'tokens', period: 'month', limit: 1_000_000 }],
          ['/v1/projects/pb2/budget', { limit: null }],
          [`/v1/accounts/${accountId}/budget`, { unit: 'tokens', period: 'month', limit: 1_000_000 }],
        ] as const) {
          const r = await put(agent, path, body);
          expect(r.status, `${path} ${JSON.stringify(r.body)}`).to.equal(403);
        }
        expect((await put(agent, '/v1/projects/pb2/budget', { limit: null })).body.code).to.equal('agent_forbidden');
        expect((await p.api.get('/v1/projects/pb2/budget')).body.budget).to.include({ limit: 1000 });
        expect((await p.api.get(`/v1/accounts/${accountId}/budget`)).body.budget).to.equal(null);

        // A person's project token is scoped to one project: not its account's budget.
        const minted = await p.api.post('/v1/projects/pb2/cli-token', {});
        expect(minted.status, JSON.stringify(minted.body)).to.equal(201);
        const scoped = client(p.srv.url, minted.body.token as string);
        expect((await put(scoped, `/v1/accounts/${accountId}/budget`, { unit: 'tokens', period: 'month', limit: 5 })).status).to.equal(403);
        // Another tenant: neither this project's budget nor this account's, read or written.
        const other = client(p.srv.url, (await p.srv.newUser('other-tenant@example.test')).token);
        for (const path of ['/v1/projects/pb2/budget', `/v1/accounts/${accountId}/budget`]) {
          expect((await other.get(path)).status, `GET ${path}`).to.be.oneOf([403, 404]);
          expect((await put(other, path, { unit: 'tokens', period: 'month', limit: 1_000_000 })).status, `PUT ${path}`).to.be.oneOf([403, 404]);
        }
        expect((await p.api.get('/v1/accounts/00000000-0000-4000-8000-000000000000/budget')).status).to.equal(404);
        expect((await p.api.get('/v1/projects/pb2/budget')).body.budget).to.include({ limit: 1000 });
      });
    } finally {
      await model.close();
    }
  });

  it('20 parallel calls from two sessions never pass a project budget; the account budget is a scope of the same ledger', async () => {
    const answer = { text: 'hello world', usage: { prompt_tokens: 8, completion_tokens: 40 } };
    const model = await startScriptedModel({ key: K, script: [], plain: () => answer });
    try {
      await withSessionProject({ slug: 'pb3', env: { SVC_LLM_UPSTREAM_URL: model.url, SVC_LLM_UPSTREAM_KEY: K, SVC_LLM_MODEL: 'scripted', ...UNCAPPED } }, async (p) => {
        const accountId = (await p.api.get('/v1/accounts/me')).body.account.account_id as string;
        expect((await put(p.api, '/v1/projects/pb3/budget', { unit: 'tokens', period: 'month', limit: 150 })).status).to.equal(200);
        const a = await sandboxOf(p);
        const b = await sandboxOf(p);
        const results = await Promise.all(
          Array.from({ length: 20 }, async (_, i) => {
            const s = i % 2 ? a : b;
            const r = await chat(s.base, s.key, { model: 'scripted', stream: true, messages: [{ role: 'user', content: 'hi' }], max_tokens: 50 });
            return { status: r.status, text: await r.text() };
          }),
        );
        const ok = results.filter((r) => r.status === 200).length;
        expect(ok).to.be.at.least(1);
        for (const r of results.filter((x) => x.status !== 200)) {
          expect(r.status).to.equal(429);
          expect(JSON.parse(r.text).error).to.include({ code: 'project_budget_exceeded', type: 'insufficient_quota' });
        }
        const upstream = model.requests.filter((r) => r.path === '/v1/chat/completions').map((r) => answer.usage.prompt_tokens + Math.min(answer.usage.completion_tokens, r.body.max_tokens as number));
        expect(upstream.length).to.equal(ok);
        const total = upstream.reduce((x, y) => x + y, 0);
        expect(total, 'tokens the upstream generated').to.be.at.most(150);
        expect((await p.api.get('/v1/projects/pb3/budget')).body.budget).to.include({ spent: total, reserved: 0 });

        // The account's budget, set below what the project spent, refuses the next call and session by its own name.
        expect((await put(p.api, `/v1/accounts/${accountId}/budget`, { unit: 'tokens', period: 'day', limit: 10 })).body.budget).to.include({ scope: 'account', spent: total });
        expect((await put(p.api, '/v1/projects/pb3/budget', { limit: null })).body).to.deep.equal({ budget: null });
        const call = await chat(a.base, a.key, { model: 'scripted', messages: [{ role: 'user', content: 'hi' }] });
        expect(call.status).to.equal(429);
        expect(((await call.json()) as { error: { code: string } }).error.code).to.equal('account_budget_exceeded');
        const session = await p.api.post(p.sessions, {});
        expect(session.status).to.equal(429);
        expect(session.body).to.include({ error: 'Account budget exceeded', code: 'account_budget_exceeded' });
        // Set below what was spent, the account's budget is crossed at once; the project's channels hear it through its stream.
        const projectId = (await p.api.get('/v1/projects/pb3')).body.project.project_id as string;
        const crossed = (await budgetEvents(p, projectId)).filter((e) => e.type === 'BudgetThresholdCrossed');
        expect(crossed.map((e) => [e.data.scope, e.data.threshold]), 'the project stopped short of 100%: no room for another call').to.deep.equal([
          ['project', 80],
          ['account', 80],
          ['account', 100],
        ]);
        const accountLog = await p.srv.db.db.rows<{ type: string; data: Record<string, unknown> }>({ text: 'SELECT type, data FROM events WHERE stream_id = $1 ORDER BY global_position', values: [`budgets-account-${accountId}`] });
        expect(accountLog.map((e) => [e.type, e.data.threshold ?? e.data.subject ?? null])).to.deep.equal([
          ['BudgetSet', null],
          ['BudgetThresholdCrossed', 80],
          ['BudgetThresholdCrossed', 100],
          ['BudgetRefused', 'model calls'],
          ['BudgetRefused', 'sessions'],
        ]);
      });
    } finally {
      await model.close();
    }
  });

  it('a budget is a person’s choice within the operator’s cap: above it 400, money without prices 400, and svc.toml cannot set one', async () => {
    await withSessionProject({ slug: 'pb4', env: { SVC_LLM_BUDGET_MAX_TOKENS: '5000' } }, async (p) => {
      const over = await put(p.api, '/v1/projects/pb4/budget', { unit: 'tokens', period: 'day', limit: 5001 });
      expect(over.status).to.equal(400);
      expect(over.body.message).to.include('SVC_LLM_BUDGET_MAX_TOKENS');
      const money = await put(p.api, '/v1/projects/pb4/budget', { unit: 'money', period: 'month', limit: 20 });
      expect(money.status).to.equal(400);
      expect(money.body.message).to.include('SVC_LLM_PRICES');
      for (const bad of [{ unit: 'tokens', period: 'day', limit: 1.5 }, { unit: 'tokens', period: 'week', limit: 10 }, { unit: 'tokens', period: 'day', limit: -1 }, { unit: 'tokens', period: 'day' }, {}]) {
        expect((await put(p.api, '/v1/projects/pb4/budget', bad)).status, JSON.stringify(bad)).to.equal(400);
      }
      expect((await put(p.api, '/v1/projects/pb4/budget', { unit: 'tokens', period: 'day', limit: 5000 })).status).to.equal(200);

      // svc budget: show, set (the cap refused with one line, bad input exit 2 before any request), remove.
      const sb = await sandbox();
      try {
        const svc = (args: string[]) => runSvc(['budget', ...args], { configPath: sb.configPath, env: { SVC_API_URL: `${p.srv.url}/v1`, SVC_CLI_TOKEN: p.srv.token, SVC_PROJECT_ID: 'pb4' }, cwd: sb.dir });
        const shown = await svc(['show']);
        expect(shown.code, shown.stderr).to.equal(0);
        expect(shown.stdout).to.match(/^5000 tokens per UTC day\nspent 0 tokens \(0%\) since \d{4}-\d\d-\d\dT00:00:00.000Z\n$/);
        const set = await svc(['set', '4000', '--per', 'month', '--json']);
        expect(set.code, set.stderr).to.equal(0);
        expect(JSON.parse(set.stdout)).to.include({ scope: 'project', unit: 'tokens', period: 'month', limit: 4000 });
        const capped = await svc(['set', '6000']);
        expect(capped.code).to.equal(1);
        expect(capped.stderr).to.include('SVC_LLM_BUDGET_MAX_TOKENS');
        for (const bad of [['set', '1.5'], ['set'], ['set', 'none', '--per', 'day'], ['show', '10']]) expect((await svc(bad)).code, bad.join(' ')).to.equal(2);
        expect((await svc(['set', 'none'])).code).to.equal(0);
        expect((await p.api.get('/v1/projects/pb4/budget')).body.budget).to.equal(null);
        expect((await svc(['set', '5000', '--per', 'day'])).code).to.equal(0);
        // --account: the account's own budget, beside the project's.
        const acct = await svc(['set', '1200', '--per', 'day', '--account']);
        expect(acct.code, acct.stderr).to.equal(0);
        expect(acct.stdout).to.match(/^1200 tokens per UTC day\n/);
        expect((await p.api.get(`/v1/accounts/${p.srv.accountId}/budget`)).body.budget).to.include({ scope: 'account', limit: 1200 });
        expect((await svc(['set', '1200', '--account', '--project', 'pb4'])).code, '--account and --project together').to.equal(2);
        expect((await svc(['set', 'none', '--account'])).code).to.equal(0);
        expect((await p.api.get(`/v1/accounts/${p.srv.accountId}/budget`)).body.budget).to.equal(null);
      } finally {
        await sb.cleanup();
      }
      // A merged svc.toml that names a budget changes nothing: budgets are never read from it.
      await mergeChange(p, 'budget', { 'svc.toml': '[budget]\ntokens = 99999999\n' });
      expect((await p.api.get('/v1/projects/pb4/budget')).body.budget).to.include({ limit: 5000 });
    });
  });
});
