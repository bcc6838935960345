import { expect } from 'chai';
import { client } from '../../support/http.js';
import { agentReady, waitForStatus, withSessionProject, type SessionProject } from '../../support/sessions.js';
import { putManifest } from '../checks/support.js';
import { until } from '../../support/wait.js';
import { runSvc, sandbox } from '../../cli/helpers.js';
import { rebuildProjections } from '../../../projections/rebuild.js';
import { checkScript, crEventsOf, crOf, eventually, firstParents, isAncestor, projectPath, queueManifest, queueOf, queueStateOf, streamEvents } from './support.js';

/**
 * The merge queue end to end: a real server (API and worker in one process), real git (the
 * project's file:// repository), real PostgreSQL, checks on the process provider, sessions
 * on the fake runtime (it records the prompts it gets).
 */
describe('merge queue', function () {
  this.timeout(300_000);

  const prompts = async (p: SessionProject, id: string) =>
    ((await p.api.get(`${p.sessions}/${id}/agent/fake/state`)).body.prompts as { body: { parts: { text: string }[] } }[]).map((x) => x.body.parts.map((t) => t.text).join(''));

  async function session(p: SessionProject) {
    const s = (await p.api.post(p.sessions, {})).body.session;
    await waitForStatus(p.api, `${p.sessions}/${s.session_id}`, ['running']);
    const env = (await agentReady(p.api, `${p.sessions}/${s.session_id}/agent/fake/state`)).body.env as Record<string, string>;
    return { id: s.session_id as string, env };
  }

  const queue = async (p: SessionProject, n: number, head: string) => {
    const r = await p.api.post(`${p.base}/${n}/merge`, { when: 'checks_pass', expected_head_sha: head });
    expect(r.status, JSON.stringify(r.body)).to.equal(202);
    expect(r.body.merge_queue).to.include({ status: 'queued', head_sha: head });
    expect(r.body.auto_merge).to.include({ status: 'pending', head_sha: head });
    return r.body;
  };

  it('disjoint CRs land each exactly once on exactly the commits checked; a conflict and a failing check leave with their reasons and reach their sessions', () =>
    withSessionProject({ slug: 'mq-done', env: { SVC_SCHEDULER: '0', SVC_CHECKS_REFRESH_MS: '200', SVC_CHECKS_CONCURRENCY: '4' } }, async (p) => {
      await putManifest(p, queueManifest({ maxBatch: 3, send: true }), { 'check.sh': checkScript(1) });
      const base0 = p.repo.tip('main')!;
      const sFail = await session(p);
      const sConf = await session(p);

      const heads: Record<string, string> = {};
      heads.a = await p.repo.commit('mq-a', { 'README.md': 'edited by a\n', 'a.txt': 'a\n' });
      heads.b = await p.repo.commit('mq-b', { 'b.txt': 'b\n' });
      heads.fail = await p.repo.commit(sFail.id, { 'fail.txt': 'breaks the check\n' });
      heads.conf = await p.repo.commit(sConf.id, { 'README.md': 'edited by conf\n' });
      heads.c = await p.repo.commit('mq-c', { 'c.txt': 'c\n' });
      heads.d = await p.repo.commit('mq-d', { 'd.txt': 'd\n' });
      const open = async (title: string, head_ref: string, session_id?: string) =>
        (await p.api.post(p.base, { title, head_ref, ...(session_id ? { session_id } : {}) })).body.change_request as { cr_id: string; number: number };
      const crs = {
        a: await open('A', 'mq-a'),
        b: await open('B', 'mq-b'),
        fail: await open('Fails', sFail.id, sFail.id),
        conf: await open('Conflicts with A', sConf.id, sConf.id),
        c: await open('C', 'mq-c'),
        d: await open('D', 'mq-d'),
      };

      // A direct merge is refused: the queue is the way in.
      const direct = await p.api.post(`${p.base}/${crs.b.number}/merge`, {});
      expect(direct.status).to.equal(409);
      expect(direct.body).to.include({ error: 'Merge queue enabled', code: 'merge_queue_enabled' });

      for (const k of ['a', 'b', 'fail', 'conf', 'c', 'd'] as const) await queue(p, crs[k].number, heads[k]!);
      // Asked again on the same head: the same entry, no second one.
      await queue(p, crs.d.number, heads.d!);

      const merged = ['a', 'b', 'c', 'd'] as const;
      await eventually(async () => {
        const all = await Promise.all(merged.map(async (k) => (await crOf(p, crs[k].number)).status));
        const left = await Promise.all((['fail', 'conf'] as const).map(async (k) => (await queueStateOf(p, crs[k].number))?.status));
        return all.every((s) => s === 'merged') && left.every((s) => s === 'left');
      }, 'the queue to drain', 180_000, async () => ({ queue: await queueOf(p) }));

      expect(await queueStateOf(p, crs.fail.number)).to.include({ status: 'left', reason: 'check_failed', context: 'test' });
      const conf = await queueStateOf(p, crs.conf.number);
      expect(conf).to.include({ status: 'left', reason: 'conflict' });
      expect(conf.context).to.include('README.md');

      // Each landed once, via the queue, naming runs that passed on exactly its merge commit.
      const landed: string[] = [];
      for (const k of merged) {
        const events = await crEventsOf(p.srv.db.db, crs[k].cr_id);
        const merges = events.filter((e) => e.type === 'ChangeRequestMerged');
        expect(merges, `${k} merged once`).to.have.length(1);
        const m = merges[0]!.data;
        expect(m.via).to.equal('queue');
        expect(m.head_commit_sha).to.equal(heads[k]);
        expect(m.check_runs).to.have.length(1);
        const run = events.find((e) => e.type === 'CheckQueued' && e.data.run_id === m.check_runs[0])!.data;
        expect(run).to.include({ merge_sha: m.merge_commit_sha, via: 'queue', head_sha: heads[k] });
        expect(events.some((e) => e.type === 'CheckPassed' && e.data.run_id === run.run_id), `${k}'s run passed`).to.equal(true);
        landed.push(m.merge_commit_sha);
      }
      // main's first-parent history holds exactly the commits the checks passed on, in queue order.
      expect(firstParents(p.repo.bare, base0)).to.deep.equal(landed);
      expect(isAncestor(p.repo.bare, heads.fail!, 'main'), 'nothing of the failing CR').to.equal(false);
      expect(isAncestor(p.repo.bare, heads.conf!, 'main'), 'nothing of the conflicting CR').to.equal(false);

      // The failing session got its failure; the conflicting one got the conflict, naming A once A landed.
      // (Out of the queue its own pair's checks resume, and fail again as the base moves: more rounds may follow.)
      await until(async () => (await prompts(p, sFail.id)).some((t) => t.includes('Check `test` failed (exit 4)') && t.includes('fail.txt is present')), 'the failure sent to its session', { timeoutMs: 60_000 });
      await until(async () => (await prompts(p, sConf.id)).length >= 1, 'the conflict sent to its session', { timeoutMs: 60_000 });
      expect((await prompts(p, sConf.id))[0]).to.include('merge queue could not merge').and.include(`#${crs.a.number}`).and.include('README.md');

      // The queue's page of record: empty now, with who left and why.
      const q = await queueOf(p);
      expect(q).to.include({ base_ref: 'main', enabled: true, max_batch: 3, state: 'idle' });
      expect(q.entries).to.deep.equal([]);
      const outcomes = Object.fromEntries(q.recent.map((r: any) => [r.number, r.outcome]));
      expect(outcomes).to.include({ [crs.a.number]: 'merged', [crs.fail.number]: 'check_failed', [crs.conf.number]: 'conflict' });
      expect(q.landed).to.equal(4);
      // The queue's stream: every rebuild recorded there.
      const qEvents = await streamEvents(p.srv.db.db, `mq-${(await p.api.get(projectPath(p))).body.project.project_id}:main`);
      expect(qEvents.filter((e) => e.type === 'MergeQueueRebuilt').length).to.be.at.least(1);
      expect(qEvents.filter((e) => e.type === 'MergeQueueLanded').reduce((n, e) => n + e.data.count, 0)).to.equal(4);
      // The queue's row is a projection like the others: a replay of the log gives exactly it.
      const verify = await rebuildProjections(p.srv.db.db, { verify: true });
      expect(verify.differences).to.deep.equal([]);
    }));

  it("an agent's push to a queued head during a batch: that CR leaves (head_moved), nothing of it lands, the one after it lands", () =>
    withSessionProject({ slug: 'mq-push', env: { SVC_SCHEDULER: '0', SVC_CHECKS_REFRESH_MS: '200' } }, async (p) => {
      await putManifest(p, queueManifest({ maxBatch: 4 }), { 'check.sh': checkScript(3) });
      const base0 = p.repo.tip('main')!;
      const s = await session(p);
      const moved = await p.repo.commit(s.id, { 'agent.txt': 'first\n' });
      const other = await p.repo.commit('mq-other', { 'other.txt': 'other\n' });
      const x = (await p.api.post(p.base, { title: 'Agent work', head_ref: s.id, session_id: s.id })).body.change_request;
      const y = (await p.api.post(p.base, { title: 'Other', head_ref: 'mq-other' })).body.change_request;
      await queue(p, x.number, moved);
      await queue(p, y.number, other);
      // Both built and their checks running: then the agent pushes to its queued head.
      await eventually(async () => {
        const q = await queueOf(p);
        return q.entries.length === 2 && q.entries.every((e: any) => e.runs.some((r: any) => r.status === 'running')) ? q : null;
      }, 'both results checking', 60_000);
      const unseen = await p.repo.commit(s.id, { 'agent.txt': 'pushed during the batch\n' });
      await eventually(async () => (await crOf(p, y.number)).status === 'merged', 'the other CR to land', 120_000, async () => ({ queue: await queueOf(p) }));
      expect(await queueStateOf(p, x.number)).to.include({ status: 'left', reason: 'head_moved', head_sha: moved });
      expect((await crOf(p, x.number)).status).to.equal('open');
      for (const h of [moved, unseen]) expect(isAncestor(p.repo.bare, h, 'main'), 'nothing of the moved CR landed').to.equal(false);
      const landed = firstParents(p.repo.bare, base0);
      expect(landed).to.have.length(1);
      const ym = (await crEventsOf(p.srv.db.db, y.cr_id)).filter((e) => e.type === 'ChangeRequestMerged');
      expect(ym).to.have.length(1);
      expect(ym[0]!.data.merge_commit_sha).to.equal(landed[0]);
      expect(ym[0]!.data.base_commit_sha, 'rebuilt without the moved CR').to.equal(base0);
    }));

  it("a person's retarget of a queued CR: it leaves with base_changed and nothing of it lands on the old base", () =>
    withSessionProject({ slug: 'mq-retarget', env: { SVC_SCHEDULER: '0', SVC_CHECKS_REFRESH_MS: '200' } }, async (p) => {
      await putManifest(p, queueManifest({ maxBatch: 2 }), { 'check.sh': checkScript(3) });
      await p.repo.commit('release', { 'release.txt': 'release\n' });
      const head = await p.repo.commit('mq-retarget', { 'r.txt': 'r\n' });
      const cr = (await p.api.post(p.base, { title: 'Retargeted', head_ref: 'mq-retarget' })).body.change_request;
      await queue(p, cr.number, head);
      await eventually(async () => ((await queueOf(p)).entries as { runs: { status: string }[] }[]).some((e) => e.runs.some((r) => r.status === 'running')), 'its result checking', 60_000);
      const retargeted = await p.api.call('PATCH', `${p.base}/${cr.number}`, { base_ref: 'release' });
      expect(retargeted.status, JSON.stringify(retargeted.body)).to.equal(200);
      await eventually(async () => (await queueStateOf(p, cr.number))?.status === 'left', 'it to leave the queue', 60_000, async () => ({ queue: await queueOf(p) }));
      expect(await queueStateOf(p, cr.number)).to.include({ status: 'left', reason: 'base_changed' });
      expect((await crOf(p, cr.number)).status).to.equal('open');
      expect(isAncestor(p.repo.bare, head, 'main'), 'nothing of it landed on main').to.equal(false);
      expect((await queueOf(p)).entries).to.deep.equal([]);
    }));

  it("an agent credential neither queues nor takes out a CR, its own or another's (403 agent_cannot_merge); a person takes one out (by_person)", () =>
    withSessionProject({ slug: 'mq-agent', env: { SVC_SCHEDULER: '0', SVC_CHECKS_REFRESH_MS: '200' } }, async (p) => {
      await putManifest(p, queueManifest(), { 'check.sh': checkScript(30) });
      const s = await session(p);
      const own = await p.repo.commit(s.id, { 'own.txt': 'own\n' });
      const theirs = await p.repo.commit('mq-theirs', { 'theirs.txt': 'theirs\n' });
      const mine = (await p.api.post(p.base, { title: 'Agent work', head_ref: s.id, session_id: s.id })).body.change_request;
      const other = (await p.api.post(p.base, { title: 'A person\'s', head_ref: 'mq-theirs' })).body.change_request;
      const sb = await sandbox();
      const svc = (args: string[]) => runSvc(args, { configPath: sb.configPath, env: { SVC_API_URL: `${p.srv.url}/v1`, SVC_CLI_TOKEN: p.srv.token, SVC_PROJECT_ID: 'mq-agent' }, cwd: sb.dir });
      const direct = await svc(['cr', 'merge', String(other.number)]);
      expect(direct.code, 'a direct merge is refused with the queue on').to.equal(1);
      expect(direct.stderr).to.include('merge queue');
      const green = await svc(['cr', 'merge', String(other.number), '--when-green']);
      expect(green.code, green.stderr).to.equal(0);
      expect(await queueStateOf(p, other.number)).to.include({ status: 'queued', head_sha: theirs });
      const agent = client(new URL(s.env.SVC_API_URL!).origin, s.env.SVC_CLI_TOKEN!);
      const P = projectPath(p);
      for (const n of [mine.number, other.number]) {
        const ask = await agent.post(`${p.base}/${n}/merge`, { when: 'checks_pass', expected_head_sha: n === mine.number ? own : theirs });
        expect(ask.status, JSON.stringify(ask.body)).to.equal(403);
        expect(ask.body.code).to.equal('agent_cannot_merge');
        const rm = await agent.call('DELETE', `${P}/merge-queue/${n}`);
        expect(rm.status, JSON.stringify(rm.body)).to.equal(403);
        expect(rm.body.code).to.equal('agent_cannot_merge');
      }
      expect(await queueStateOf(p, mine.number)).to.equal(null);
      expect(await queueStateOf(p, other.number)).to.include({ status: 'queued' });
      expect((await agent.get(`${P}/merge-queue`)).status, 'an agent may read the queue').to.equal(200);

      const ls = await svc(['queue', 'ls', '--json']);
      expect(ls.code, ls.stderr).to.equal(0);
      expect(JSON.parse(ls.stdout).entries.map((e: any) => [e.number, e.position])).to.deep.equal([[other.number, 1]]);
      const rm = await svc(['queue', 'rm', String(other.number)]);
      expect(rm.code, rm.stderr).to.equal(0);
      expect(await queueStateOf(p, other.number)).to.include({ status: 'left', reason: 'by_person' });
      const again = await svc(['queue', 'rm', String(other.number)]);
      expect(again.code, 'not queued any more').to.equal(1);
      expect(again.stderr).to.include('not in the merge queue');
      expect((await p.api.call('DELETE', `${P}/merge-queue/${other.number}`)).status).to.equal(409);
      await sb.cleanup();
      await eventually(async () => (await queueOf(p)).entries.length === 0, 'the queue empty');

      // Queued again, then closed: it leaves with `closed`, its queue runs cancelled, nothing lands.
      await queue(p, other.number, theirs);
      await eventually(async () => (await queueOf(p)).entries[0]?.state === 'checking', 'built and checking again', 60_000);
      expect((await p.api.post(`${p.base}/${other.number}/close`, {})).status).to.equal(200);
      await eventually(async () => (await queueStateOf(p, other.number))?.reason === 'closed', 'it leaves with closed', 60_000);
      const events = await crEventsOf(p.srv.db.db, other.cr_id);
      expect(events.map((e) => e.type)).to.include('ChangeRequestQueued').and.include('ChangeRequestDequeued').and.not.include('ChangeRequestMerged');
      expect(events.filter((e) => e.type === 'ChangeRequestDequeued').map((e) => e.data.reason)).to.deep.equal(['by_person', 'closed']);
      const queueRuns = events.filter((e) => e.type === 'CheckQueued' && e.data.via === 'queue').map((e) => e.data.run_id);
      const ended = new Set(events.filter((e) => ['CheckCancelled', 'CheckPassed', 'CheckFailed', 'CheckErrored'].includes(e.type)).map((e) => e.data.run_id));
      expect(queueRuns.every((id) => ended.has(id)), 'no queue run left going').to.equal(true);
      expect(isAncestor(p.repo.bare, theirs, 'main')).to.equal(false);
    }));
});
