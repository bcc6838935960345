import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { DEFAULT_SANDBOX_IMAGE } from '../../../infra/sandbox/docker.js';
import { skipUnlessCi } from '../../support/skip.js';
import { runSvc, sandbox } from '../../cli/helpers.js';
import { dashFetch, signInHttp, withPassword } from '../../dashboard/support.js';
import { client } from '../../support/http.js';
import { startScriptedModel } from '../../support/scripted-model.js';
import { agentReady, waitForStatus, withSessionProject, type SessionProject } from '../../support/sessions.js';
import { eventually, until } from '../../support/wait.js';

/**
 * What sessions and change requests cost (docs/models.md "Cost"), through real gateway
 * calls from a sandbox's own key to the scripted upstream: each usage row keeps the price
 * it was charged at (an operator's price change rewrites nothing), a model without a price
 * is counted in tokens and flagged, calls are attributed to the CR open from the session's
 * branch, else the next one opened from it, else to none; a model of the project's own
 * provider is unmetered; another tenant or another project's agent reads no cost.
 */
const K = 'upstream-key-K-cost';
const PRICES = JSON.stringify({ currency: 'USD', models: { scripted: { input: 3, output: 15 } } });
/** Every call: 1000 prompt and 200 completion tokens, as the upstream reports them. */
const answer = { text: 'ok', usage: { prompt_tokens: 1000, completion_tokens: 200 } };
/** 1000 × 3 / 1e6 + 200 × 15 / 1e6 */
const CALL_USD = 0.006;

const chat = (base: string, key: string, model: string) =>
  fetch(`${base}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] }),
  });

/** A running session and its sandbox's model key, gateway base and CLI token. */
async function sandboxOf(p: SessionProject, body: Record<string, unknown> = {}) {
  const created = await p.api.post(p.sessions, body);
  expect(created.status, JSON.stringify(created.body)).to.equal(201);
  const id = created.body.session.session_id as string;
  await waitForStatus(p.api, `${p.sessions}/${id}`, ['running']);
  const env = (await agentReady(p.api, `${p.sessions}/${id}/agent/fake/state`)).body.env as Record<string, string>;
  const call = async (model = 'scripted') => {
    const r = await chat(env.SVC_LLM_BASE_URL!, env.SVC_LLM_API_KEY!, model);
    expect(r.status, await r.clone().text()).to.equal(200);
    await r.text();
  };
  return { id, env, call };
}

const usageOf = async (p: SessionProject, id: string) => (await p.api.get(`${p.sessions}/${id}`)).body.session.usage;
const costOf = async (p: SessionProject, n: number) => {
  const r = await p.api.get(`${p.base}/${n}/cost`);
  expect(r.status, JSON.stringify(r.body)).to.equal(200);
  return r.body.cost;
};

async function openCr(p: SessionProject, sessionId: string, title: string): Promise<number> {
  await p.repo.commit(sessionId, { [`${title}.txt`]: `${title}\n` });
  const r = await p.api.post(p.base, { title, head_ref: sessionId, session_id: sessionId });
  expect(r.status, JSON.stringify(r.body)).to.equal(201);
  return r.body.change_request.number as number;
}

describe('what sessions and change requests cost', function () {
  this.timeout(180_000);
  const env = (model: string) => ({
    SVC_LLM_UPSTREAM_URL: model,
    SVC_LLM_UPSTREAM_KEY: K,
    SVC_LLM_MODEL: 'scripted',
    SVC_LLM_MODELS: 'scripted,free-beta',
    SVC_LLM_PRICES: PRICES,
  });

  it('each call keeps the price it was charged at: an operator who changes SVC_LLM_PRICES rewrites nothing; a model without a price is counted and flagged', async () => {
    const model = await startScriptedModel({ key: K, script: [], plain: () => answer });
    try {
      await withSessionProject({ slug: 'cost1', env: env(model.url) }, async (p) => {
        const s = await sandboxOf(p);
        await s.call('scripted');
        await s.call('free-beta');
        const before = await usageOf(p, s.id);
        expect(before).to.deep.include({ input_tokens: 2000, output_tokens: 400, requests: 2, money: [{ currency: 'USD', amount: CALL_USD }], unpriced_tokens: 1200, unmetered: false, cpu_seconds: null });
        expect(before.by_model).to.deep.equal([
          { model: 'free-beta', input_tokens: 1000, output_tokens: 200, requests: 1, money: [], unpriced_tokens: 1200, priced: false },
          { model: 'scripted', input_tokens: 1000, output_tokens: 200, requests: 1, money: [{ currency: 'USD', amount: CALL_USD }], unpriced_tokens: 0, priced: true },
        ]);
        expect(before.sandbox_seconds, 'the sandbox has been running').to.be.greaterThan(0);
        // The session's page shows the same: money, the unpriced model flagged.
        await withPassword(p.srv);
        const cookie = await signInHttp(p.srv.url);
        const page = (await dashFetch(p.srv.url, cookie, `/projects/cost1/sessions/${s.id}`)).text;
        expect(page).to.match(/<dd data-money>USD 0\.006 <span class="muted">\+ 1,200 unpriced tokens<\/span><\/dd>/);
        expect(page).to.contain('data-unpriced="free-beta"').and.not.contain('data-unpriced="scripted"').and.not.contain('data-unmetered');
        const rows = await p.srv.db.db.rows<{ model: string; input_price_per_mtok: string | null; output_price_per_mtok: string | null; currency: string | null }>({
          text: 'SELECT model, input_price_per_mtok::text, output_price_per_mtok::text, currency FROM llm_usage ORDER BY usage_id',
          values: [],
        });
        expect(rows).to.deep.equal([
          { model: 'scripted', input_price_per_mtok: '3', output_price_per_mtok: '15', currency: 'USD' },
          { model: 'free-beta', input_price_per_mtok: null, output_price_per_mtok: null, currency: null },
        ]);
        await p.api.post(`${p.sessions}/${s.id}/stop`, {});
        await waitForStatus(p.api, `${p.sessions}/${s.id}`, ['stopped']);
        const stopped = (await usageOf(p, s.id)).sandbox_seconds;

        // The operator prices both models anew, in another currency, and restarts.
        await p.srv.restart({ SVC_LLM_PRICES: JSON.stringify({ currency: 'EUR', models: { scripted: { input: 30, output: 150 }, 'free-beta': { input: 1, output: 1 } } }) });
        const api = client(p.srv.url, p.srv.token);
        const q = { ...p, api };
        const after = await usageOf(q, s.id);
        expect(after.money, 'the calls made before the change keep their price').to.deep.equal([{ currency: 'USD', amount: CALL_USD }]);
        expect(after.unpriced_tokens).to.equal(1200);
        expect(after.sandbox_seconds, 'a stopped sandbox counts no more time').to.equal(stopped);
        const t = await sandboxOf(q);
        await t.call('scripted');
        await t.call('free-beta');
        expect((await usageOf(q, t.id)).money, 'calls after it are charged the new prices').to.deep.equal([{ currency: 'EUR', amount: 0.0612 }]);
        expect((await usageOf(q, t.id)).unpriced_tokens).to.equal(0);
        await api.post(`${p.sessions}/${t.id}/stop`, {});
      });
    } finally {
      await model.close();
    }
  });

  it('a call belongs to the CR open from its session branch, else to the next one opened from it, else to none; the CR JSON stays the spec’s', async () => {
    const model = await startScriptedModel({ key: K, script: [], plain: () => answer });
    try {
      await withSessionProject({ slug: 'cost2', env: env(model.url) }, async (p) => {
        const s = await sandboxOf(p);
        await s.call(); // before any CR: the next one opened (#1)
        const first = await openCr(p, s.id, 'first');
        await s.call(); // while #1 is open
        await s.call();
        expect((await p.api.post(`${p.base}/${first}/close`, {})).status).to.equal(200);
        await s.call(); // after #1 closed: the next one opened (#2)
        const second = await openCr(p, s.id, 'second');
        await s.call(); // while #2 is open
        expect((await p.api.post(`${p.base}/${second}/close`, {})).status).to.equal(200);
        await s.call(); // after the last CR from the branch: unattributed

        const one = await costOf(p, first);
        expect(one).to.deep.include({ number: first, session_id: s.id, input_tokens: 3000, output_tokens: 600, requests: 3, unpriced_tokens: 0, unmetered: false, cpu_seconds: null, check_seconds: 0 });
        expect(one.money).to.deep.equal([{ currency: 'USD', amount: 0.018 }]);
        expect(one.sandbox_seconds, 'its share of the sandbox time').to.be.greaterThan(0);
        // The CR's page shows what its API says.
        await withPassword(p.srv);
        const crPage = (await dashFetch(p.srv.url, await signInHttp(p.srv.url), `/projects/cost2/change-requests/${first}`)).text;
        expect(crPage).to.contain('data-cost').and.contain('3,000 input · 600 output tokens (3 model calls)').and.contain('<span data-money>USD 0.02</span>');
        const two = await costOf(p, second);
        expect(two).to.deep.include({ input_tokens: 2000, requests: 2 });
        const usage = await usageOf(p, s.id);
        expect(usage.requests).to.equal(6);
        expect(usage.by_change_request.map((c: { number: number | null; requests: number }) => [c.number, c.requests])).to.deep.equal([
          [first, 3],
          [second, 2],
          [null, 1],
        ]);
        // The sandbox's time is split across the CRs and the rest, and adds up to the session's.
        const split = usage.by_change_request.reduce((n: number, c: { sandbox_seconds: number }) => n + c.sandbox_seconds, 0);
        expect(split).to.be.closeTo(usage.sandbox_seconds, 0.01);

        // A session that never opened a CR: all of it unattributed, and no CR counts it.
        const lone = await sandboxOf(p);
        await lone.call();
        const loneUsage = await usageOf(p, lone.id);
        expect(loneUsage.by_change_request.map((c: { cr_id: string | null; requests: number }) => [c.cr_id, c.requests])).to.deep.equal([[null, 1]]);
        expect((await costOf(p, first)).requests).to.equal(3);

        // The CLI prints the same numbers (svc cr show, svc sessions info).
        const sb = await sandbox();
        try {
          const svc = (args: string[]) => runSvc(args, { configPath: sb.configPath, cwd: sb.dir, env: { SVC_API_URL: `${p.srv.url}/v1`, SVC_CLI_TOKEN: p.srv.token, SVC_PROJECT_ID: 'cost2' } });
          const show = await svc(['cr', 'show', String(first)]);
          expect(show.code, show.stderr).to.equal(0);
          expect(show.stdout).to.contain('tokens:\t3000 in, 600 out (3 model calls)\n').and.contain('cost:\tUSD 0.02\n').and.match(/\nsandbox_time:\t\d+ s\n/);
          const info = await svc(['sessions', 'info', s.id]);
          expect(info.code, info.stderr).to.equal(0);
          expect(info.stdout).to.contain('tokens:\t6000 in, 1200 out (6 model calls)\n').and.contain('cost:\tUSD 0.04\n');
          expect(info.stdout).to.contain(`  #${first}:\t3600 tokens, USD 0.02, sandbox`).and.contain('  unattributed:\t1200 tokens, USD 0.006');
        } finally {
          await sb.cleanup();
        }

        // The CR's own JSON keeps exactly the spec's fields.
        const cr = (await p.api.get(`${p.base}/${first}`)).body.change_request;
        expect(Object.keys(cr)).to.not.include.members(['cost', 'usage', 'money']);
        for (const id of [s.id, lone.id]) await p.api.post(`${p.sessions}/${id}/stop`, {});
      });
    } finally {
      await model.close();
    }
  });

  it('attribution at the edges: a call at the instant a CR opens is its own, at the instant it closes the next (re)opened one’s; a merged CR takes nothing after it', async () => {
    const model = await startScriptedModel({ key: K, script: [], plain: () => answer });
    try {
      await withSessionProject({ slug: 'cost5', env: env(model.url) }, async (p) => {
        const s = await sandboxOf(p);
        const first = await openCr(p, s.id, 'first');
        expect((await p.api.post(`${p.base}/${first}/close`, {})).status).to.equal(200);
        expect((await p.api.post(`${p.base}/${first}/reopen`, {})).status).to.equal(200);
        const merged = await p.api.post(`${p.base}/${first}/merge`, {});
        expect(merged.status, JSON.stringify(merged.body)).to.equal(200);
        const second = await openCr(p, s.id, 'second');
        expect((await p.api.post(`${p.base}/${second}/close`, {})).status).to.equal(200);
        // The times the CRs' events recorded, to the microsecond.
        const at = async (n: number, type: string) =>
          (await p.srv.db.db.one<{ at: string }>({
            text: `SELECT CASE e.type WHEN 'ChangeRequestOpened' THEN e.data->>'created_at' WHEN 'ChangeRequestClosed' THEN e.data->>'closed_at'
                WHEN 'ChangeRequestReopened' THEN e.data->>'reopened_at' ELSE e.data->>'merged_at' END AS at
              FROM events e JOIN change_requests c ON e.stream_id = 'cr-' || c.cr_id::text WHERE c.number = $1 AND e.type = $2`,
            values: [n, type],
          }))!.at;
        const [o1, c1, r1, m1, o2, c2] = [await at(first, 'ChangeRequestOpened'), await at(first, 'ChangeRequestClosed'), await at(first, 'ChangeRequestReopened'), await at(first, 'ChangeRequestMerged'), await at(second, 'ChangeRequestOpened'), await at(second, 'ChangeRequestClosed')];
        const shift = (iso: string, ms: number) => new Date(Date.parse(iso) + ms).toISOString();
        const account = (await p.srv.db.db.one<{ account_id: string; project_id: string }>({ text: "SELECT account_id::text, project_id::text FROM projects WHERE slug = 'cost5'", values: [] }))!;
        // Calls recorded at chosen instants (as the gateway writes them), each named for where it belongs.
        const calls: Array<[string, string]> = [
          [shift(o1, -1000), 'first'], [o1, 'first'], [shift(c1, -1), 'first'], [c1, 'first'], [r1, 'first'],
          [m1, 'second'], [shift(o2, 1), 'second'],
          [c2, 'none'], [shift(c2, 5000), 'none'],
        ];
        for (const [t, name] of calls) {
          await p.srv.db.db.run({
            text: `INSERT INTO llm_usage (account_id, project_id, session_id, sandbox_id, model, input_tokens, output_tokens, status, created_at, input_price_per_mtok, output_price_per_mtok, currency)
              VALUES ($1, $2, $3, gen_random_uuid(), $4, 1000, 0, 200, $5, 1, 0, 'USD')`,
            values: [account.account_id, account.project_id, s.id, name, t],
          });
        }
        const one = await costOf(p, first);
        const two = await costOf(p, second);
        expect(one.by_model.map((m: { model: string; requests: number }) => [m.model, m.requests])).to.deep.equal([['first', 5]]);
        expect(two.by_model.map((m: { model: string; requests: number }) => [m.model, m.requests])).to.deep.equal([['second', 2]]);
        expect(one.money).to.deep.equal([{ currency: 'USD', amount: 0.005 }]);
        const shares = (await usageOf(p, s.id)).by_change_request.map((c: { number: number | null; requests: number }) => [c.number, c.requests]);
        expect(shares).to.deep.equal([[first, 5], [second, 2], [null, 2]]);
        await p.api.post(`${p.sessions}/${s.id}/stop`, {});
      });
    } finally {
      await model.close();
    }
  });

  it('CPU time where the provider reports it: a docker sandbox’s, read at its stop; none (null) on the process provider', async function () {
    if (spawnSync('docker', ['info'], { encoding: 'utf8' }).status !== 0) skipUnlessCi(this, 'no Docker engine here');
    if (spawnSync('docker', ['image', 'inspect', DEFAULT_SANDBOX_IMAGE], { encoding: 'utf8' }).status !== 0) skipUnlessCi(this, `image ${DEFAULT_SANDBOX_IMAGE} is missing: build it with ops/sandbox-image.sh`);
    await withSessionProject({ slug: 'cost6', env: { SVC_SANDBOX_PROVIDER: 'docker', SVC_AGENT_RUNTIME: 'opencode', SVC_SESSION_PROVISION_TIMEOUT_SECONDS: '180' } }, async (p) => {
      const created = await p.api.post(p.sessions, {});
      expect(created.status).to.equal(201);
      const id = created.body.session.session_id as string;
      await waitForStatus(p.api, `${p.sessions}/${id}`, ['running'], 180_000);
      expect((await usageOf(p, id)).cpu_seconds, 'not read while it runs').to.equal(null);
      await p.api.post(`${p.sessions}/${id}/stop`, {});
      const cpu = await eventually(async () => ((await usageOf(p, id)).cpu_seconds as number | null) ?? undefined, 'the stop recorded the CPU time', { timeoutMs: 60_000 });
      expect(cpu).to.be.greaterThan(0);
      // Less than the wall time the container ran, times the CPUs it may use.
      expect(cpu).to.be.below((await usageOf(p, id)).sandbox_seconds * 2 + 1);
    });
    await withSessionProject({ slug: 'cost7' }, async (p) => {
      const s = await sandboxOf(p);
      await p.api.post(`${p.sessions}/${s.id}/stop`, {});
      await waitForStatus(p.api, `${p.sessions}/${s.id}`, ['stopped']);
      await until(async () => (await p.srv.db.db.one<{ n: number }>({ text: "SELECT count(*)::int AS n FROM session_sandboxes WHERE session_id = $1 AND state = 'stopped'", values: [s.id] }))!.n === 1, 'the sandbox stopped');
      expect((await usageOf(p, s.id)).cpu_seconds).to.equal(null);
    });
  });

  it('a session whose model is its own provider’s is unmetered; a person’s branch costs no tokens', async () => {
    const model = await startScriptedModel({ key: K, script: [], plain: () => answer });
    try {
      await withSessionProject({ slug: 'cost3', env: env(model.url) }, async (p) => {
        const s = await sandboxOf(p, { model: 'anthropic/claude-x' });
        expect((await usageOf(p, s.id))).to.deep.include({ unmetered: true, requests: 0 });
        await withPassword(p.srv);
        const page = (await dashFetch(p.srv.url, await signInHttp(p.srv.url), `/projects/cost3/sessions/${s.id}`)).text;
        expect(page).to.contain('data-unmetered');
        const n = await openCr(p, s.id, 'own-key');
        expect(await costOf(p, n)).to.deep.include({ unmetered: true, requests: 0, session_id: s.id });
        await p.repo.commit('feature', { 'f.txt': 'f\n' });
        const person = (await p.api.post(p.base, { title: 'Person work', head_ref: 'feature' })).body.change_request;
        expect(await costOf(p, person.number)).to.deep.include({ session_id: null, requests: 0, money: [], sandbox_seconds: 0, unmetered: false });
        await p.api.post(`${p.sessions}/${s.id}/stop`, {});
      });
    } finally {
      await model.close();
    }
  });

  it("another tenant and another project's agent cannot read a project's cost (404/403)", async () => {
    const model = await startScriptedModel({ key: K, script: [], plain: () => answer });
    try {
      await withSessionProject({ slug: 'cost4', env: env(model.url) }, async (p) => {
        const s = await sandboxOf(p);
        await s.call();
        const n = await openCr(p, s.id, 'mine');
        const path = `${p.base}/${n}/cost`;
        // This project's own agent reads it (a read of its project).
        const own = client(new URL(s.env.SVC_API_URL!).origin, s.env.SVC_CLI_TOKEN!);
        expect((await own.get(path)).status).to.equal(200);
        // A CR that does not exist, by number, uuid or junk: 404 with the error body.
        for (const ref of ['999', '00000000-0000-4000-8000-000000000000', 'junk%20ref']) {
          const miss = await p.api.get(`${p.base}/${ref}/cost`);
          expect(miss.status, ref).to.equal(404);
          expect(miss.body.error).to.be.a('string');
        }

        const other = await p.srv.newUser('other@example.test');
        const stranger = client(p.srv.url, other.token);
        const r = await stranger.get(path);
        expect(r.status).to.be.oneOf([403, 404]);
        expect(JSON.stringify(r.body)).to.not.include('input_tokens');
        // By uuid as well.
        const crId = (await p.api.get(`${p.base}/${n}`)).body.change_request.cr_id;
        expect((await stranger.get(`${p.base}/${crId}/cost`)).status).to.be.oneOf([403, 404]);

        // An agent of another project of the same account.
        const made = await p.api.post('/v1/projects', { name: 'cost4b', slug: 'cost4b', repo_url: p.repo.url });
        expect(made.status).to.equal(201);
        const q = { ...p, sessions: '/v1/projects/cost4b/sessions' };
        const t = await sandboxOf(q);
        const agent = client(new URL(t.env.SVC_API_URL!).origin, t.env.SVC_CLI_TOKEN!);
        const a = await agent.get(path);
        expect(a.status).to.be.oneOf([403, 404]);
        expect(JSON.stringify(a.body)).to.not.include('input_tokens');
        await until(async () => (await p.api.get(`${p.sessions}/${s.id}`)).status === 200, 'the server answers');
        for (const [api, sess] of [[p.sessions, s.id], [q.sessions, t.id]] as const) await p.api.post(`${api}/${sess}/stop`, {});
      });
    } finally {
      await model.close();
    }
  });
});
