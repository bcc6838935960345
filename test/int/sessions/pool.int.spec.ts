import { expect } from 'chai';
import { execFile, execFileSync } from 'node:child_process';
import { promisify } from 'node:util';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { probeBwrap } from '../../../infra/sandbox/bwrap.js';
import { sandboxFetch } from '../../../lib/sandbox-dial.js';
import { startScriptedModel } from '../../support/scripted-model.js';
import { agentReady, waitForStatus, withSessionProject, type SessionProject } from '../../support/sessions.js';
import { skipUnlessCi } from '../../support/skip.js';
import { until } from '../../support/wait.js';

/**
 * The pool of prepared sandboxes (docs/sessions.md "Pool"), on the process
 * and bwrap providers with the scripted runtime: what a pool sandbox holds before its claim
 * (read from outside, as an attacker with the provider's view would), the claim, the
 * refill, a killed pool sandbox replaced, and the cold paths.
 */
const execFileP = promisify(execFile);
const SECRET = 'pool-secret-value-5d1c9e';
const SESSION_SHAPED = /svc_(sbx|pat|llm)_|pool-secret-value/;

interface PoolRow {
  sandbox_id: string;
  project_id: string;
  state: string;
  ref: string | null;
  url: string | null;
  session_id: string | null;
}

const rows = (p: SessionProject) => p.srv.db.db.rows<PoolRow>({ text: 'SELECT sandbox_id::text, project_id::text, state, ref, url, session_id FROM pool_sandboxes ORDER BY created_at', values: [] });
const readyRows = async (p: SessionProject) => (await rows(p)).filter((r) => r.state === 'ready');

/** Every process under `pid` (the sandbox's entrypoint or bwrap), by parent links in /proc. */
function descendants(pid: number): number[] {
  const parent = new Map<number, number>();
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const stat = readFileSync(`/proc/${e}/stat`, 'utf8');
      parent.set(Number(e), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      /* gone */
    }
  }
  const out = [pid];
  for (let i = 0; i < out.length; i++) for (const [c, pp] of parent) if (pp === out[i] && !out.includes(c)) out.push(c);
  return out;
}

function filesUnder(dir: string, out: string[] = []): string[] {
  for (const name of existsSync(dir) ? readdirSync(dir) : []) {
    const p = path.join(dir, name);
    const st = statSync(p, { throwIfNoEntry: false });
    if (st?.isDirectory()) filesUnder(p, out);
    else if (st?.isFile() && st.size < 5_000_000) out.push(p);
  }
  return out;
}

const read = (f: string) => {
  try {
    return readFileSync(f, 'latin1');
  } catch {
    return '';
  }
};

async function enablePool(p: SessionProject, n: number): Promise<void> {
  await p.repo.commit('main', { 'svc.toml': `[sandbox]\npool = ${n}\n` });
  const put = await fetch(`${p.srv.url}/v1/projects/pool/secrets/API_SECRET`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${p.srv.token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ value: SECRET }),
  });
  expect(put.status).to.equal(204);
  const m = await p.api.get('/v1/projects/pool/manifest');
  expect(m.status, JSON.stringify(m.body)).to.equal(200);
}

const sandboxOf = async (p: SessionProject, id: string) => (await waitForStatus(p.api, `${p.sessions}/${id}`, ['running'], 60_000)).sandbox.sandbox_id as string;

for (const provider of ['process', 'bwrap'] as const) {
  describe(`pool of prepared sandboxes (${provider})`, function () {
    this.timeout(180_000);
    before(function () {
      if (provider === 'bwrap') {
        const probe = probeBwrap();
        if (!probe.ok) skipUnlessCi(this, `bwrap: ${probe.reason}`);
      }
    });
    const env = { SVC_SANDBOX_PROVIDER: provider, SVC_SANDBOX_POOL_MAX: '2', SVC_LLM_UPSTREAM_URL: 'http://127.0.0.1:9/v1', SVC_LLM_MODEL: 'scripted' };

    it('holds no token or secret before its claim; the claim hands the session over without a restart, and the agent pushes its branch', async () => {
      const model = await startScriptedModel({ key: 'sk-pool-upstream', script: [{ text: 'from the model' }] });
      try {
        await withSessionProject({ slug: 'pool', env: { ...env, SVC_LLM_UPSTREAM_URL: model.url, SVC_LLM_UPSTREAM_KEY: 'sk-pool-upstream' } }, async (p) => {
        await enablePool(p, 1);
        await until(async () => (await readyRows(p)).length === 1, 'the pool to fill');
        const [pooled] = await readyRows(p);
        const dir = path.join(p.srv.dataDir, 'sandboxes', pooled!.sandbox_id);

        // The attack: everything a pool sandbox's processes and files hold, read from outside.
        const pids = descendants(Number(String(pooled!.ref).split(':')[0]));
        expect(pids.length).to.be.greaterThan(1);
        for (const pid of pids) expect(read(`/proc/${pid}/environ`), `environ of ${pid}`).to.not.match(SESSION_SHAPED);
        const files = filesUnder(dir);
        expect(files.some((f) => f.includes(`${path.sep}home${path.sep}`))).to.equal(true);
        for (const f of files) expect(read(f), f).to.not.match(SESSION_SHAPED);
        const runtimePid = pids.at(-1)!;
        const poolKey = /SVC_TOKEN=(svc_pool_[^\0]+)/.exec(read(`/proc/${pids[0]}/environ`) || read(`/proc/${pids[1]}/environ`))?.[1];
        expect(poolKey).to.be.a('string');

        const created = await p.api.post(p.sessions, {});
        expect(created.status).to.equal(201);
        const id = created.body.session.session_id as string;
        expect(await sandboxOf(p, id)).to.equal(pooled!.sandbox_id);
        expect((await rows(p)).map((r) => r.sandbox_id)).to.not.include(pooled!.sandbox_id);

        // The runtime that booted in the pool is the one answering: no restart.
        const state = (await agentReady(p.api, `${p.sessions}/${id}/agent/fake/state`)).body;
        expect(descendants(Number(String(pooled!.ref).split(':')[0]))).to.include(runtimePid);
        expect(state.env.SVC_TOKEN).to.match(/^svc_pool_/); // the boot's environment; the pool key is dead now:
        // The runtime never held the model key: its provider calls the daemon's relay, which adds the session's.
        expect(state.env.OPENCODE_CONFIG_CONTENT).to.not.match(SESSION_SHAPED);
        const call = (await p.api.post(`${p.sessions}/${id}/agent/fake/model`, { model: 'scripted', stream: false, messages: [{ role: 'user', content: 'hi' }] })).body;
        expect(call.status, call.body).to.equal(200);
        expect(JSON.parse(call.body).object).to.equal('chat.completion');
        expect(model.requests.at(-1)!.headers.authorization).to.equal('Bearer sk-pool-upstream');

        // The pool key opens nothing after the claim: not the control surface, not a second claim.
        const withPoolKey = (route: string, body: unknown) =>
          sandboxFetch(pooled!.url!, route, { method: 'POST', headers: { authorization: `Bearer ${poolKey}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
        expect((await withPoolKey('/svc/prompt', { text: 'hi' })).status).to.equal(401);
        expect((await withPoolKey('/svc/claim', { token: 'x'.repeat(32), session_id: 'other', branch: 'other' })).status).to.equal(401);

        const health = await fetch(`${p.srv.url}${p.sessions}/${id}`, { headers: { authorization: `Bearer ${p.srv.token}` } }).then((r) => r.json() as any);
        expect(health.session.branch).to.equal(id);

        // The agent's login shell has the session: identity, tokens, secrets; its push lands on the session branch.
        const home = path.join(dir, 'home');
        const sessionEnv = read(path.join(home, '.svc', 'session.env'));
        expect(sessionEnv).to.include(SECRET).and.match(/SVC_TOKEN='svc_sbx_/);
        if (provider === 'process') {
          // As the runtime's bash tool runs it: the runtime's own (pool-boot) environment, a login shell.
          // Not execFileSync: the push goes through this process's own gateway.
          const { stdout: out } = await execFileP('bash', ['-lc', 'cd "$SVC_WORKSPACE" && git commit -q --allow-empty -m "from the pool" && git push -q origin HEAD && echo "$API_SECRET $(git log -1 --format=%an)"'], {
            env: { ...state.env, GIT_TERMINAL_PROMPT: '0' },
            encoding: 'utf8',
            timeout: 30_000,
          });
          expect(out.trim()).to.equal(`${SECRET} Owner (svc agent)`);
          expect(p.repo.tip(id)).to.equal(execFileSync('git', ['-C', path.join(dir, 'workspace'), 'rev-parse', 'HEAD'], { encoding: 'utf8' }).trim());
        }

        // Refilled with a new sandbox; a second session gets that one, never the first again.
        await until(async () => (await readyRows(p)).length === 1, 'the pool to fill');
        const [next] = await readyRows(p);
        expect(next!.sandbox_id).to.not.equal(pooled!.sandbox_id);
        const second = (await p.api.post(p.sessions, {})).body.session.session_id as string;
        expect(await sandboxOf(p, second)).to.equal(next!.sandbox_id);
        });
      } finally {
        await model.close();
      }
    });

    it('replaces a killed pool sandbox; pool sandboxes do not count against the session cap', () =>
      withSessionProject({ slug: 'pool', env: { ...env, SVC_SESSION_CAP: '1' } }, async (p) => {
        await enablePool(p, 2);
        await until(async () => (await readyRows(p)).length === 2, 'the pool to fill');
        const [victim] = await readyRows(p);
        process.kill(-Number(String(victim!.ref).split(':')[0]), 'SIGKILL');
        await until(async () => {
          const r = await readyRows(p);
          return r.length === 2 && !r.some((x) => x.sandbox_id === victim!.sandbox_id);
        }, 'the pool to fill');
        // Two prepared sandboxes and a cap of 1: the session is admitted.
        expect((await p.api.post(p.sessions, {})).status).to.equal(201);
      }));

    it('an empty pool, pool 0 and another project take the cold path', () =>
      withSessionProject({ slug: 'pool', env }, async (p) => {
        await enablePool(p, 1);
        await until(async () => (await readyRows(p)).length === 1, 'the pool to fill');
        const [pooled] = await readyRows(p);
        // Another project of the same account: never handed this one. (It shares the repository,
        // so once its manifest follows main it keeps a pool of its own: only this project's rows count.)
        expect((await p.api.post('/v1/projects', { name: 'other', slug: 'other', repo_url: p.repo.url })).status).to.equal(201);
        const other = (await p.api.post('/v1/projects/other/sessions', {})).body.session.session_id as string;
        const otherSb = (await waitForStatus(p.api, `/v1/projects/other/sessions/${other}`, ['running'], 60_000)).sandbox.sandbox_id;
        expect(otherSb).to.not.equal(pooled!.sandbox_id);
        const mine = async () => (await readyRows(p)).filter((r) => r.project_id === pooled!.project_id);
        expect((await mine()).map((r) => r.sandbox_id)).to.deep.equal([pooled!.sandbox_id]);
        // Two creates at once on a pool of one: one claims it, the other starts cold.
        const [a, b] = await Promise.all([p.api.post(p.sessions, {}), p.api.post(p.sessions, {})]);
        const got = [await sandboxOf(p, a.body.session.session_id), await sandboxOf(p, b.body.session.session_id)];
        expect(got.filter((x) => x === pooled!.sandbox_id)).to.have.length(1);
      }));

    it('SVC_SANDBOX_POOL_MAX=0 boots nothing: sessions start cold', () =>
      withSessionProject({ slug: 'pool', env: { ...env, SVC_SANDBOX_POOL_MAX: '0' } }, async (p) => {
        await enablePool(p, 1);
        const id = (await p.api.post(p.sessions, {})).body.session.session_id as string;
        await sandboxOf(p, id);
        expect(await rows(p)).to.deep.equal([]);
      }));
  });
}
