import { expect } from 'chai';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { until } from '../../support/wait.js';
import { client } from '../../support/http.js';
import { startScriptedModel, type ScriptedModel } from '../../support/scripted-model.js';
import { agentReady, waitForStatus, withSessionProject } from '../../support/sessions.js';
import { eventually } from '../../support/wait.js';

/**
 * The model gateway (`/v1/llm`, docs/models.md) between sandboxes and the scripted model
 * as the upstream (which requires the upstream key K): each sandbox's own key, K only
 * upstream, OpenAI-shaped errors, usage per call, budgets, and the key dying with the
 * sandbox. The scripted runtime stands in for the agent: the calls are made with the key
 * the sandbox was given, as the runtime would.
 */
const K = 'upstream-key-K-0123456789';

async function waitAgent(api: ReturnType<typeof client>, url: string, states: string[], timeoutMs = 30_000): Promise<any> {
  let last: unknown;
  return eventually(
    async () => {
      const r = await api.get(url);
      last = r.body;
      return r.status === 200 && states.includes(r.body.session.agent_state) ? r.body.session : undefined;
    },
    'the agent state',
    { timeoutMs, maxIntervalMs: 50 },
  ).catch(() => {
    throw new Error(`agent_state never reached ${states.join('|')}: ${JSON.stringify(last)}`);
  });
}

const chat = (base: string, key: string | undefined, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${base}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}), ...headers },
    body: JSON.stringify(body),
  });

describe('the model gateway (/v1/llm) with a scripted upstream', function () {
  this.timeout(120_000);
  let model: ScriptedModel;
  before(async () => {
    model = await startScriptedModel({ key: K, models: ['scripted', 'other'], script: () => ({ text: 'hello', usage: { prompt_tokens: 120, completion_tokens: 30 } }) });
  });
  after(() => model?.close());

  it('takes only a live sandbox key, sends only K upstream, streams, records usage, budgets, and dies with the sandbox', () =>
    withSessionProject(
      {
        slug: 'gw',
        env: { SVC_LLM_UPSTREAM_URL: model.url, SVC_LLM_UPSTREAM_KEY: K, SVC_LLM_MODEL: 'scripted', SVC_LLM_MODELS: 'scripted', SVC_LLM_SESSION_TOKEN_BUDGET: '300' },
      },
      async ({ srv, api, sessions }) => {
        const created = await api.post(sessions, {});
        expect(created.status).to.equal(201);
        expect(created.body.session.agent_state).to.equal('starting');
        const one = `${sessions}/${created.body.session.session_id}`;
        const s = await waitAgent(api, one, ['ready', 'error']);
        expect(s.agent_state).to.equal('ready');
        expect(s.usage).to.deep.include({ input_tokens: 0, output_tokens: 0, requests: 0, by_model: [], money: [], unpriced_tokens: 0, unmetered: false });
        const env = (await agentReady(api, `${one}/agent/fake/state`)).body.env as Record<string, string>;
        const key = env.SVC_LLM_API_KEY!;
        const base = env.SVC_LLM_BASE_URL!;
        // The model endpoint as the sandbox reaches the server: its gateway (forwarder origin,
        // the same as SVC_API_URL's), not the public listener, where the key is refused.
        const gateway = new URL(env.SVC_API_URL!).origin;
        expect(gateway).to.not.equal(new URL(srv.url).origin);
        expect(base).to.equal(`${gateway}/v1/llm`);
        expect((await chat(`${srv.url}/v1/llm`, key, { model: 'scripted', messages: [{ role: 'user', content: 'hi' }] })).status, 'key on the public listener').to.equal(401);
        expect(JSON.stringify(env)).to.not.include(K);

        // Only the sandbox's gateway key: none, a PAT, the sandbox's service key and its CLI token are 401, in OpenAI's shape.
        for (const bad of [undefined, srv.token, env.SVC_TOKEN, env.SVC_CLI_TOKEN, `${key}x`]) {
          const r = await chat(base, bad, { model: 'scripted', messages: [{ role: 'user', content: 'hi' }] });
          expect(r.status, String(bad)).to.equal(401);
          const body = (await r.json()) as any;
          expect(body.error).to.include({ type: 'authentication_error', code: 'invalid_api_key', param: null });
        }
        // …and the gateway key is refused everywhere else.
        for (const origin of [srv.url, gateway]) {
          for (const route of ['/v1/projects', `/v1/projects/gw/sessions`, `/v1/projects/gw/change-requests`]) {
            expect((await client(origin, key).get(route)).status, `${origin} ${route}`).to.equal(401);
          }
          expect((await client(origin, key).get(`/v1/projects/${s.project_id}/git/clone-credential`)).status, origin).to.equal(401);
        }
        const models = await fetch(`${base}/models`, { headers: { authorization: `Bearer ${key}` } });
        expect(((await models.json()) as any).data.map((m: any) => m.id)).to.deep.equal(['scripted']);
        expect(model.requests.length, 'nothing refused reached the upstream').to.equal(0);

        // A streamed call: relayed as the upstream's SSE, K upstream, nothing of the caller's headers.
        const r = await chat(
          base,
          key,
          { model: 'scripted', stream: true, messages: [{ role: 'user', content: 'hi' }], tools: [{ type: 'function', function: { name: 'bash', parameters: { type: 'object' } } }] },
          { 'OpenAI-Organization': 'org-evil', 'OpenAI-Project': 'proj-evil', cookie: 'a=b', 'x-svc-user-context': 'forged' },
        );
        expect(r.status).to.equal(200);
        expect(r.headers.get('content-type')).to.match(/text\/event-stream/);
        const text = await r.text();
        expect(text).to.include('chat.completion.chunk').and.include('"usage"').and.include('data: [DONE]');
        const up = model.requests[0]!;
        expect(up.headers.authorization).to.equal(`Bearer ${K}`);
        for (const h of ['openai-organization', 'openai-project', 'cookie', 'x-svc-user-context']) expect(up.headers, h).to.not.have.property(h);
        expect(up.body.stream_options).to.deep.equal({ include_usage: true });
        expect(up.raw).to.not.include(key);
        expect(JSON.stringify(up.headers)).to.not.include(key);

        // A model the gateway does not offer, a body that is not JSON: OpenAI's shape, nothing upstream.
        const other = await chat(base, key, { model: 'other', messages: [] });
        expect(other.status).to.equal(404);
        expect(((await other.json()) as any).error).to.include({ code: 'model_not_found', type: 'invalid_request_error' });
        const junk = await fetch(`${base}/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: '{' });
        expect(junk.status).to.equal(400);
        expect(((await junk.json()) as any).error.code).to.equal('invalid_json');
        expect((await fetch(`${base}/embeddings`, { method: 'POST', headers: { authorization: `Bearer ${key}` } })).status).to.equal(404);
        expect(model.requests.length).to.equal(1);

        // A plain (non-streamed) call; usage per call and per model in the session's JSON.
        const plain = await chat(base, key, { model: 'scripted', messages: [{ role: 'user', content: 'hi' }] });
        expect(plain.status).to.equal(200);
        expect(((await plain.json()) as any).choices[0].message.content).to.equal('Scripted title');
        const info = (await api.get(one)).body.session;
        // The scripted model reports 120 + 30 tokens for a turn with tools, 100 + 10 for a plain call.
        expect(info.usage).to.deep.include({ input_tokens: 220, output_tokens: 40, requests: 2, unpriced_tokens: 260 });
        // No SVC_LLM_PRICES: counted in tokens, flagged unpriced, no money.
        expect(info.usage.by_model).to.deep.equal([{ model: 'scripted', input_tokens: 220, output_tokens: 40, requests: 2, money: [], unpriced_tokens: 260, priced: false }]);

        // The budget (300 tokens a session): the third call passes (260 spent), the fourth is a 429 (370).
        expect((await chat(base, key, { model: 'scripted', messages: [] })).status).to.equal(200);
        const spent = await chat(base, key, { model: 'scripted', messages: [] });
        expect(spent.status).to.equal(429);
        expect(((await spent.json()) as any).error).to.include({ type: 'insufficient_quota', code: 'session_budget_exceeded' });
        expect(model.requests.length).to.equal(3);

        // Stopped: the key is dead.
        expect((await api.post(`${one}/stop`, {})).body.session.agent_state).to.equal('stopped');
        expect((await chat(base, key, { model: 'scripted', messages: [] })).status).to.equal(401);
        expect((await fetch(`${base}/models`, { headers: { authorization: `Bearer ${key}` } })).status).to.equal(401);
      },
    ));

  it('another session of another account cannot spend with a key it does not have, and each sandbox gets its own key', () =>
    withSessionProject({ slug: 'gw2', env: { SVC_LLM_UPSTREAM_URL: model.url, SVC_LLM_UPSTREAM_KEY: K, SVC_LLM_MODEL: 'scripted' } }, async ({ api, sessions }) => {
      const a = (await api.post(sessions, {})).body.session.session_id;
      const b = (await api.post(sessions, {})).body.session.session_id;
      await waitForStatus(api, `${sessions}/${a}`, ['running']);
      await waitForStatus(api, `${sessions}/${b}`, ['running']);
      const ka = (await agentReady(api, `${sessions}/${a}/agent/fake/state`)).body.env.SVC_LLM_API_KEY;
      const kb = (await agentReady(api, `${sessions}/${b}/agent/fake/state`)).body.env.SVC_LLM_API_KEY;
      expect(ka).to.match(/^svc_llm_/).and.not.equal(kb);
      // Restart: a new key; the old one is refused at once.
      expect((await api.post(`${sessions}/${a}/restart`, {})).status).to.equal(200);
      const base = (await agentReady(api, `${sessions}/${b}/agent/fake/state`)).body.env.SVC_LLM_BASE_URL;
      expect((await fetch(`${base}/models`, { headers: { authorization: `Bearer ${ka}` } })).status).to.equal(401);
      expect((await fetch(`${base}/models`, { headers: { authorization: `Bearer ${kb}` } })).status).to.equal(200);
    }));
  it('streams without buffering: the first chunk arrives while the upstream still holds the rest; a caller that goes away cuts the upstream call', async () => {
    const held: (() => void)[] = [];
    const release = () => held.splice(0).forEach((f) => f());
    let upstreamGone = 0;
    const upstream = http.createServer((req, res) => {
      req.resume();
      res.on('close', () => {
        if (!res.writableFinished) upstreamGone++;
      });
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: {"choices":[{"index":0,"delta":{"content":"first"}}]}\n\n');
      new Promise<void>((r) => held.push(r)).then(() => {
        res.write('data: {"choices":[],"usage":{"prompt_tokens":7,"completion_tokens":3}}\n\n');
        res.end('data: [DONE]\n\n');
      });
    });
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/v1`;
    try {
      await withSessionProject({ slug: 'gw3', env: { SVC_LLM_UPSTREAM_URL: url, SVC_LLM_MODEL: 'held' } }, async ({ api, sessions }) => {
        const id = (await api.post(sessions, {})).body.session.session_id;
        await waitForStatus(api, `${sessions}/${id}`, ['running']);
        const env = (await agentReady(api, `${sessions}/${id}/agent/fake/state`)).body.env;
        const decoder = new TextDecoder();
        const r = await chat(env.SVC_LLM_BASE_URL, env.SVC_LLM_API_KEY, { model: 'held', stream: true, messages: [] });
        const reader = r.body!.getReader();
        let got = '';
        while (!got.includes('first')) got += decoder.decode((await reader.read()).value);
        release();
        for (let c = await reader.read(); !c.done; c = await reader.read()) got += decoder.decode(c.value);
        expect(got).to.include('"usage"').and.include('[DONE]');
        expect((await api.get(`${sessions}/${id}`)).body.session.usage).to.include({ input_tokens: 7, output_tokens: 3, requests: 1 });

        // A second call stays held: its first chunk read, the caller leaves.
        const abort = new AbortController();
        const left = await fetch(`${env.SVC_LLM_BASE_URL}/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${env.SVC_LLM_API_KEY}` },
          body: JSON.stringify({ model: 'held', stream: true, messages: [] }),
          signal: abort.signal,
        });
        await left.body!.getReader().read();
        abort.abort();
        await until(() => upstreamGone >= 1, 'the upstream call cut');
        release();
      });
    } finally {
      release();
      upstream.closeAllConnections();
      await new Promise<void>((r) => upstream.close(() => r()));
    }
  });
});
