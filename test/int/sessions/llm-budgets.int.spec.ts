import { expect } from 'chai';
import { promptEstimate } from '../../../services/llm/ledger.js';
import { startScriptedModel, type ScriptedModel, type ScriptedStep } from '../../support/scripted-model.js';
import { agentReady, waitForStatus, withSessionProject, type SessionProject } from '../../support/sessions.js';
import { until } from '../../support/wait.js';

/**
 * Model budgets that hold (docs/models.md "Budgets"), attacked from inside a sandbox with
 * its own model key: parallel streamed calls, calls asking for more output or several
 * choices, streams cancelled before their usage chunk and streams the upstream cuts. The
 * scripted upstream reports no more output than each request's max_tokens, as a real one,
 * so what it generated is what it was asked for.
 */
const K = 'upstream-key-K-budgets';
/** The sandbox's own gateway caps (requests in flight, rate) set past the bursts here: these specs attack the budget, gateway-limits.int the caps. */
const UNCAPPED = { SVC_SANDBOX_MAX_REQUESTS: '64', SVC_SANDBOX_MAX_REQUEST_RATE: '500' };

const chat = (base: string, key: string, body: unknown, signal?: AbortSignal) =>
  fetch(`${base}/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` }, body: JSON.stringify(body), ...(signal ? { signal } : {}) });

/** A session's model key and gateway base, as its sandbox got them. */
async function sandboxModelKey(p: SessionProject): Promise<{ id: string; key: string; base: string }> {
  const created = await p.api.post(p.sessions, {});
  expect(created.status).to.equal(201);
  const id = created.body.session.session_id as string;
  await waitForStatus(p.api, `${p.sessions}/${id}`, ['running']);
  const env = (await agentReady(p.api, `${p.sessions}/${id}/agent/fake/state`)).body.env as Record<string, string>;
  return { id, key: env.SVC_LLM_API_KEY!, base: env.SVC_LLM_BASE_URL! };
}

/** What the upstream generated for each request it got: its reported prompt plus the output max_tokens let it write. */
function generated(model: ScriptedModel, step: Required<Pick<ScriptedStep, 'usage'>>): number[] {
  return model.requests
    .filter((r) => r.path === '/v1/chat/completions')
    .map((r) => {
      expect(r.body.max_tokens, 'every call upstream carries the output it was granted').to.be.a('number').and.at.least(1);
      const choices = Number.isInteger(r.body.n) && r.body.n > 1 ? r.body.n : 1;
      return step.usage.prompt_tokens + Math.min(step.usage.completion_tokens, r.body.max_tokens * choices);
    });
}

const ledgerRow = (p: SessionProject, scope: string, scopeId: string) =>
  p.srv.db.db.one<{ spent: number; reserved: number; in_flight: number }>({
    text: 'SELECT sum(spent)::float8 AS spent, sum(reserved)::float8 AS reserved, sum(in_flight)::int AS in_flight FROM llm_ledger WHERE scope = $1 AND scope_id = $2',
    values: [scope, scopeId],
  });

describe('model budgets hold (reserved before a call, settled after)', function () {
  this.timeout(180_000);
  const answer = { text: 'hello world', usage: { prompt_tokens: 8, completion_tokens: 40 } };

  it('20 parallel streamed calls from one sandbox never make the upstream generate past a 30-token session budget', async () => {
    const model = await startScriptedModel({ key: K, script: [], plain: () => answer });
    try {
      await withSessionProject({ slug: 'bud1', env: { SVC_LLM_UPSTREAM_URL: model.url, SVC_LLM_UPSTREAM_KEY: K, SVC_LLM_MODEL: 'scripted', SVC_LLM_SESSION_TOKEN_BUDGET: '30', ...UNCAPPED } }, async (p) => {
        const { id, key, base } = await sandboxModelKey(p);
        // Some ask for far more output than the budget has, some for several choices.
        const bodies = Array.from({ length: 20 }, (_, i) => ({
          model: 'scripted',
          stream: true,
          messages: [{ role: 'user', content: 'hi' }],
          ...(i % 3 === 0 ? { max_tokens: 100_000 } : {}),
          ...(i % 5 === 0 ? { n: 3 } : {}),
        }));
        const results = await Promise.all(bodies.map(async (b) => {
          const r = await chat(base, key, b);
          return { status: r.status, text: await r.text() };
        }));
        const ok = results.filter((r) => r.status === 200);
        const refused = results.filter((r) => r.status !== 200);
        expect(ok.length, 'the budget is used, not refused whole').to.be.at.least(1);
        for (const r of refused) {
          expect(r.status).to.equal(429);
          expect(JSON.parse(r.text).error).to.include({ type: 'insufficient_quota', code: 'session_budget_exceeded', param: null });
        }
        const upstream = generated(model, answer);
        expect(upstream.length).to.equal(ok.length);
        expect(upstream.reduce((a, b) => a + b, 0), 'tokens the upstream generated').to.be.at.most(30);
        // Every request that reached the upstream was granted within what the budget left: (at least) the smallest estimate plus its output ≤ 30.
        for (const r of model.requests) expect(promptEstimate(bodies[1]!) + r.body.max_tokens * (r.body.n ?? 1)).to.be.at.most(30);
        const row = (await ledgerRow(p, 'session', id))!;
        expect(row).to.deep.equal({ spent: upstream.reduce((a, b) => a + b, 0), reserved: 0, in_flight: 0 });
        const usage = (await p.api.get(`${p.sessions}/${id}`)).body.session.usage;
        expect(usage.input_tokens + usage.output_tokens).to.be.at.most(30);
      });
    } finally {
      await model.close();
    }
  });

  it("20 parallel streamed calls from two sessions never pass their account's budget", async () => {
    const model = await startScriptedModel({ key: K, script: [], plain: () => answer });
    try {
      await withSessionProject({ slug: 'bud2', env: { SVC_LLM_UPSTREAM_URL: model.url, SVC_LLM_UPSTREAM_KEY: K, SVC_LLM_MODEL: 'scripted', SVC_LLM_ACCOUNT_TOKEN_BUDGET: '90', ...UNCAPPED } }, async (p) => {
        const a = await sandboxModelKey(p);
        const b = await sandboxModelKey(p);
        const results = await Promise.all(
          Array.from({ length: 20 }, async (_, i) => {
            const s = i % 2 ? a : b;
            const r = await chat(s.base, s.key, { model: 'scripted', stream: true, messages: [{ role: 'user', content: 'hi' }], max_tokens: 50 });
            return { status: r.status, text: await r.text() };
          }),
        );
        const ok = results.filter((r) => r.status === 200).length;
        expect(ok).to.be.at.least(1);
        for (const r of results.filter((x) => x.status !== 200)) expect(JSON.parse(r.text).error).to.include({ code: 'account_budget_exceeded' });
        const upstream = generated(model, answer);
        expect(upstream.length).to.equal(ok);
        expect(upstream.reduce((x, y) => x + y, 0)).to.be.at.most(90);
        const account = (await p.srv.db.db.one<{ account_id: string }>({ text: 'SELECT account_id::text FROM llm_usage LIMIT 1', values: [] }))!.account_id;
        expect((await ledgerRow(p, 'account', account))!.spent).to.equal(upstream.reduce((x, y) => x + y, 0));
      });
    } finally {
      await model.close();
    }
  });

  it('a stream cancelled after its last text chunk, before the usage chunk, is charged; so is one the upstream cuts', async () => {
    const text = 'a partial answer of forty characters....';
    const model = await startScriptedModel({
      key: K,
      script: [],
      plain: (body) => ({ text, usage: { prompt_tokens: 8, completion_tokens: 10 }, cut: String(body.messages?.[0]?.content).includes('cut') ? 'destroy' : 'hold' }),
    });
    try {
      await withSessionProject({ slug: 'bud3', env: { SVC_LLM_UPSTREAM_URL: model.url, SVC_LLM_UPSTREAM_KEY: K, SVC_LLM_MODEL: 'scripted', SVC_LLM_SESSION_TOKEN_BUDGET: '10000' } }, async (p) => {
        const { id, key, base } = await sandboxModelKey(p);
        const one = `${p.sessions}/${id}`;
        const held = { model: 'scripted', stream: true, messages: [{ role: 'user', content: 'cancel me' }] };
        const abort = new AbortController();
        const r = await chat(base, key, held, abort.signal);
        expect(r.status).to.equal(200);
        const reader = r.body!.getReader();
        let seen = '';
        while (!seen.includes(text)) seen += new TextDecoder().decode((await reader.read()).value);
        expect(seen).to.not.include('"usage"');
        abort.abort();
        await until(async () => (await p.api.get(one)).body.session.usage.requests === 1, 'the cancelled call settled');
        const afterCancel = (await p.api.get(one)).body.session.usage;
        expect(afterCancel.input_tokens, 'the prompt, estimated').to.equal(promptEstimate(held));
        expect(afterCancel.output_tokens, 'what streamed, estimated').to.equal(Math.ceil(text.length / 4));

        const cut = { model: 'scripted', stream: true, messages: [{ role: 'user', content: 'cut me' }] };
        const c = await chat(base, key, cut);
        expect(c.status).to.equal(200);
        await c.text().catch(() => '');
        await until(async () => (await p.api.get(one)).body.session.usage.requests === 2, 'the cut call settled');
        const afterCut = (await p.api.get(one)).body.session.usage;
        expect(afterCut.input_tokens - afterCancel.input_tokens).to.equal(promptEstimate(cut));
        expect(afterCut.output_tokens - afterCancel.output_tokens).to.equal(Math.ceil(text.length / 4));
        // The ledger charged the same, and holds nothing for them any more.
        expect(await ledgerRow(p, 'session', id)).to.deep.equal({ spent: afterCut.input_tokens + afterCut.output_tokens, reserved: 0, in_flight: 0 });
      });
    } finally {
      await model.close();
    }
  });

  it('a call the upstream holds past SVC_LLM_UPSTREAM_TIMEOUT_MS is cut there and charged, its place given back', async () => {
    const text = 'sixteen chars...';
    const model = await startScriptedModel({ key: K, script: [], plain: () => ({ text, cut: 'hold' }) });
    try {
      await withSessionProject(
        { slug: 'bud5', env: { SVC_LLM_UPSTREAM_URL: model.url, SVC_LLM_UPSTREAM_KEY: K, SVC_LLM_MODEL: 'scripted', SVC_LLM_SESSION_TOKEN_BUDGET: '5000', SVC_LLM_UPSTREAM_TIMEOUT_MS: '1500' } },
        async (p) => {
          const { id, key, base } = await sandboxModelKey(p);
          const body = { model: 'scripted', stream: true, messages: [{ role: 'user', content: 'hold me' }] };
          const r = await chat(base, key, body);
          expect(r.status).to.equal(200);
          // The upstream never ends it: the gateway does, at the timeout.
          const streamed = await r.text().catch(() => '');
          expect(streamed).to.not.include('"usage"');
          await until(async () => (await p.api.get(`${p.sessions}/${id}`)).body.session.usage.requests === 1, 'the held call settled');
          const charged = promptEstimate(body) + Math.ceil(text.length / 4);
          expect(await ledgerRow(p, 'session', id)).to.deep.equal({ spent: charged, reserved: 0, in_flight: 0 });
        },
      );
    } finally {
      await model.close();
    }
  });

  it('a non-streamed call its caller leaves once upstream is charged its whole reservation: the upstream generates it anyway', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const model = await startScriptedModel({ key: K, script: [], plain: () => ({ ...answer, gate }) });
    try {
      await withSessionProject({ slug: 'bud6', env: { SVC_LLM_UPSTREAM_URL: model.url, SVC_LLM_UPSTREAM_KEY: K, SVC_LLM_MODEL: 'scripted', SVC_LLM_SESSION_TOKEN_BUDGET: '5000' } }, async (p) => {
        const { id, key, base } = await sandboxModelKey(p);
        const body = { model: 'scripted', max_tokens: 300, messages: [{ role: 'user', content: 'write a long answer' }] };
        const leave = new AbortController();
        const call = chat(base, key, body, leave.signal).catch(() => null);
        await until(() => model.requests.length === 1, 'the call upstream');
        leave.abort();
        await call;
        await until(async () => (await ledgerRow(p, 'session', id))!.in_flight === 0, 'the call settled');
        expect((await ledgerRow(p, 'session', id))!.spent, 'the prompt and all the output it was granted, not the prompt alone').to.equal(promptEstimate(body) + 300);
      });
    } finally {
      release();
      await model.close();
    }
  });

  it('fields that would make the upstream generate more than was reserved are refused (400), nothing sent upstream', async () => {
    const model = await startScriptedModel({ key: K, script: [], plain: () => answer });
    try {
      await withSessionProject({ slug: 'bud7', env: { SVC_LLM_UPSTREAM_URL: model.url, SVC_LLM_UPSTREAM_KEY: K, SVC_LLM_MODEL: 'scripted', SVC_LLM_SESSION_TOKEN_BUDGET: '5000' } }, async (p) => {
        const { key, base } = await sandboxModelKey(p);
        const base_ = { model: 'scripted', messages: [{ role: 'user', content: 'hi' }] };
        for (const [field, extra] of [['n', { n: '8' }], ['stream', { stream: 'true' }], ['max_tokens', { max_tokens: '5' }], ['max_completion_tokens', { max_completion_tokens: 0 }], ['best_of', { best_of: 4 }], ['n', { n: 1000 }]] as const) {
          const r = await chat(base, key, { ...base_, ...extra });
          expect(r.status, `${field}: ${JSON.stringify(extra)}`).to.equal(400);
          expect(((await r.json()) as { error: { message: string } }).error.message).to.include(field);
        }
        expect(model.requests.filter((r) => r.path === '/v1/chat/completions')).to.have.length(0);
      });
    } finally {
      await model.close();
    }
  });

  it('over its concurrency a call waits, then is refused with 429 in OpenAI’s shape; nothing of it reaches the upstream', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const model = await startScriptedModel({ key: K, script: [], plain: () => ({ ...answer, gate }) });
    try {
      await withSessionProject({ slug: 'bud4', env: { SVC_LLM_UPSTREAM_URL: model.url, SVC_LLM_UPSTREAM_KEY: K, SVC_LLM_MODEL: 'scripted', SVC_LLM_SESSION_CONCURRENCY: '2' } }, async (p) => {
        const { id, key, base } = await sandboxModelKey(p);
        const body = { model: 'scripted', stream: true, messages: [{ role: 'user', content: 'hi' }] };
        const inFlight = [chat(base, key, body), chat(base, key, body)];
        await until(() => model.requests.length === 2, 'two calls upstream');
        expect((await ledgerRow(p, 'session', id))!.in_flight).to.equal(2);
        const t0 = Date.now();
        const third = await chat(base, key, body);
        const waited = Date.now() - t0;
        expect(third.status).to.equal(429);
        expect(await third.json()).to.deep.equal({
          error: { message: 'This session has 2 model calls in flight (SVC_LLM_SESSION_CONCURRENCY); retry when one has ended.', type: 'rate_limit_error', param: null, code: 'rate_limit_exceeded' },
        });
        expect(waited, 'it waited for a place first').to.be.at.least(2_500);
        expect(model.requests.length).to.equal(2);
        release();
        for (const r of await Promise.all(inFlight)) {
          expect(r.status).to.equal(200);
          expect(await r.text()).to.include('"usage"');
        }
        const again = await chat(base, key, body);
        expect(again.status, 'a place again once they ended').to.equal(200);
        expect(await again.text()).to.include('"usage"');
        expect((await ledgerRow(p, 'session', id))!.in_flight).to.equal(0);
      });
    } finally {
      release();
      await model.close();
    }
  });
});
