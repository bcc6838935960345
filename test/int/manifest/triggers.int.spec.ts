import { expect } from 'chai';
import { withProject } from '../../support/server.js';
import { agentReady, waitForStatus, withSessionProject } from '../../support/sessions.js';
import { fireDueTriggers } from '../../../services/triggers/scheduler.js';
import { silentLogger } from '../../../lib/logger.js';
import type { SpawnSessionInput } from '../../../services/triggers/service.js';
import { eventually, mergeChange, projectPath } from './support.js';

const MANIFEST = `# triggers of this project
[[triggers]]
slug = "nightly"
schedule = "0 3 * * *"   # 03:00 server time
prompt = "Clean up"
agent = "build"
enabled = true

[[triggers]]
slug = "off"
schedule = "* * * * *"
prompt = "Never"
enabled = false
`;

describe('triggers', function () {
  this.timeout(90_000);

  it('lists synced triggers; enable/disable open a CR whose diff is exactly one line; the scheduler follows the merge', () =>
    withProject({ slug: 'trg', env: { SVC_SCHEDULER: '0' } }, async (p) => {
      const sha = await mergeChange(p, 'triggers', { 'svc.toml': MANIFEST });
      const tp = `${projectPath(p)}/triggers`;
      await eventually(async () => (await p.api.get(`${projectPath(p)}/manifest`)).body.source_sha === sha, 'sync');
      const list = (await p.api.get(tp)).body.triggers;
      expect(list.map((t: { slug: string }) => t.slug)).to.deep.equal(['nightly', 'off']);
      expect(Object.keys(list[0])).to.deep.equal(['slug', 'schedule', 'prompt', 'agent', 'model', 'enabled', 'last_fired_at', 'next_fire_at']);
      const next = new Date(list[0].next_fire_at);
      expect(next.getHours()).to.equal(3);
      expect(next.getMinutes()).to.equal(0);
      expect(list[1]).to.include({ enabled: false, next_fire_at: null });
      expect((await p.api.get(`${tp}/nope`)).status).to.equal(404);

      const res = await p.api.post(`${tp}/nightly/disable`, {});
      expect(res.status).to.equal(201);
      const cr = res.body.change_request;
      expect(cr).to.include({ base_ref: 'main', status: 'open', title: 'Disable trigger nightly' });
      const diff = (await p.api.get(`${p.base}/${cr.number}/diff`)).body;
      expect(diff.files).to.deep.equal([{ path: 'svc.toml', status: 'modified', additions: 1, deletions: 1, binary: false, patch_truncated: false }]);
      const changed = diff.patch.split('\n').filter((l: string) => /^[+-](?![+-])/.test(l));
      expect(changed).to.deep.equal(['-enabled = true', '+enabled = false']);
      // Already in that state on main: 409, no CR.
      expect((await p.api.post(`${tp}/off/disable`, {})).status).to.equal(409);
      // Nothing changes until the CR merges.
      expect((await p.api.get(`${tp}/nightly`)).body.trigger.enabled).to.equal(true);
      const merged = await p.api.post(`${p.base}/${cr.number}/merge`, {});
      await eventually(async () => (await p.api.get(`${tp}/nightly`)).body.trigger.enabled === false, 'the scheduler to follow the merge');
      expect(merged.status).to.equal(200);
    }));

  it('a manual fire spawns a session the same way as an interactive one: the trigger\'s prompt, bootstrap, the project\'s secrets', () =>
    withSessionProject({ slug: 'trg-fire', env: { SVC_SCHEDULER: '0' } }, async (p) => {
      expect((await p.api.call('PUT', `${projectPath(p)}/secrets/GREETING`, { value: 'hello-from-secrets' })).status).to.equal(204);
      await mergeChange(p, 'triggers', { 'svc.toml': MANIFEST });
      const tp = `${projectPath(p)}/triggers`;
      await eventually(async () => (await p.api.get(tp)).body.triggers?.length === 2, 'sync');
      const r = await p.api.post(`${tp}/nightly/fire`, {});
      expect(r.status, JSON.stringify(r.body)).to.equal(202);
      const s = r.body.session;
      expect(s).to.include({ status: 'provisioning', agent: 'build', base_ref: 'main' });
      const t = (await p.api.get(`${tp}/nightly`)).body.trigger;
      expect(t.last_fired_at).to.be.a('string');
      expect(t.fires[0]).to.include({ kind: 'manual', outcome: 'spawned', session_id: s.session_id });
      const one = `${p.sessions}/${s.session_id}`;
      const running = await waitForStatus(p.api, one, ['running', 'failed']);
      expect(running.status, JSON.stringify(running.error)).to.equal('running');
      const env = (await agentReady(p.api, `${one}/agent/fake/state`)).body.env as Record<string, string>;
      expect(env.SVC_INITIAL_PROMPT).to.equal('Clean up');
      expect(env.SVC_BOOTSTRAP_AGENT_SESSION).to.equal('1');
      expect(env.GREETING).to.equal('hello-from-secrets');
      expect(env.SVC_PROJECT_SECRET_NAMES).to.equal('GREETING');
      expect(env.SVC_PROJECT_SECRETS_REVISION).to.equal('1');
    }));

  it('the scheduler spawns through spawnSession once per tick across two schedulers, and never fires a disabled trigger', () =>
    withProject({ slug: 'trg-sched', env: { SVC_SCHEDULER: '0' } }, async (p) => {
      await mergeChange(p, 'triggers', { 'svc.toml': MANIFEST });
      await eventually(async () => (await p.api.get(`${projectPath(p)}/triggers`)).body.triggers?.length === 2, 'sync');
      const db = p.srv.db.db;
      const spawned: SpawnSessionInput[] = [];
      const spawnSession = async (input: SpawnSessionInput) => {
        spawned.push(input);
        return { session_id: `s-${spawned.length}` };
      };
      const deps = { db, repos: { for: () => { throw new Error('unused'); } }, logger: silentLogger, spawnSession };
      // Two workers' passes at once (the loop is workers/trigger-scheduler.ts's).
      const a = { tick: (now: Date) => fireDueTriggers(deps, now) };
      const b = a;
      // Both triggers due for ten ticks in a row (a fake clock: ticks in the past, now fixed).
      for (let i = 0; i < 10; i++) {
        const tick = new Date(Date.UTC(2020, 0, 1, 0, i));
        await db.run({ text: 'UPDATE triggers SET next_fire_at = $1', values: [tick] });
        const [wa, wb] = await Promise.all([a.tick(new Date(tick.getTime() + 1000)), b.tick(new Date(tick.getTime() + 1000))]);
        expect([...wa, ...wb].map((w) => w.slug), `tick ${i}`).to.deep.equal(['nightly']);
      }
      expect(spawned).to.have.length(10);
      expect(spawned[0]).to.deep.include({ prompt: 'Clean up', trigger: 'nightly', agent: 'build', userId: p.srv.userId });
      const fires = await db.rows<{ slug: string; outcome: string; session_id: string }>({ text: "SELECT slug, outcome, session_id FROM trigger_fires WHERE kind = 'schedule'", values: [] });
      expect(fires).to.have.length(10);
      expect(fires.every((f) => f.slug === 'nightly' && f.outcome === 'spawned' && f.session_id.startsWith('s-'))).to.equal(true);
    }));
});
