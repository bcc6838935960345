import { expect } from 'chai';
import { client } from '../../support/http.js';
import { agentReady, waitForStatus, withSessionProject, type SessionProject } from '../../support/sessions.js';
import { rebuildProjections } from '../../../projections/rebuild.js';
import { until } from '../../support/wait.js';

/**
 * Review comments and "send to agent" over the API, on the process
 * provider with the fake runtime (which records the prompts it gets): line comments checked
 * against the diff, people resolve and agents cannot, a second tenant sees nothing, a round
 * reaches the origin session (restarted when stopped) and the agent's comment answers it,
 * "changes since your last review", `?as_of=` and `projections rebuild --verify`.
 */
describe('review comments and send to agent (API)', function () {
  this.timeout(120_000);

  /** A session, a commit on its branch and the CR it opened (as a person, with session_id). */
  async function sessionCr(p: SessionProject) {
    const s = (await p.api.post(p.sessions, {})).body.session;
    await waitForStatus(p.api, `${p.sessions}/${s.session_id}`, ['running']);
    const env = (await agentReady(p.api, `${p.sessions}/${s.session_id}/agent/fake/state`)).body.env as Record<string, string>;
    const head = await p.repo.commit(s.session_id, { 'README.md': 'fixture, changed\n', 'app.txt': 'one\ntwo\nthree\n' });
    const cr = (await p.api.post(p.base, { title: 'Agent work', head_ref: s.session_id, session_id: s.session_id })).body.change_request;
    expect(cr.origin_session_id).to.equal(s.session_id);
    const agent = client(new URL(env.SVC_API_URL!).origin, env.SVC_CLI_TOKEN!);
    return { s, cr, head, agent, c: `${p.base}/${cr.number}` };
  }

  const prompts = async (p: SessionProject, id: string) =>
    ((await p.api.get(`${p.sessions}/${id}/agent/fake/state`)).body.prompts as { body: { parts: { text: string }[] } }[]).map((x) => x.body.parts.map((t) => t.text).join(''));

  it('line comments are checked against the diff; people resolve, agents comment on their own CR and cannot resolve (403)', () =>
    withSessionProject({ slug: 'rev' }, async (p) => {
      const { cr, head, agent, c } = await sessionCr(p);
      const ok = await p.api.post(`${c}/comments`, { body: 'Why three?', path: 'app.txt', line: 3 });
      expect(ok.status, JSON.stringify(ok.body)).to.equal(201);
      expect(ok.body.comment).to.include({ path: 'app.txt', line: 3, side: 'RIGHT', commit_sha: head, head_sha: head, resolved: false, cr_id: cr.cr_id });
      expect(ok.body.comment.author).to.deep.equal({ kind: 'user', user_id: p.srv.userId, session_id: null });
      const left = await p.api.post(`${c}/comments`, { body: 'the old line', path: 'README.md', line: 1, side: 'LEFT', commit_sha: head });
      expect(left.status, JSON.stringify(left.body)).to.equal(201);
      const general = await p.api.post(`${c}/comments`, { body: 'Looks fine otherwise.' });
      expect(general.body.comment).to.include({ path: null, line: null, side: null, commit_sha: null });

      for (const [body, field] of [
        [{ body: 'x', path: 'app.txt', line: 4 }, 'line'],
        [{ body: 'x', path: 'README.md', line: 2, side: 'LEFT' }, 'line'],
        [{ body: 'x', path: 'nope.txt', line: 1 }, 'path'],
        [{ body: 'x', path: 'app.txt' }, 'line'],
        [{ body: 'x', line: 1 }, 'path'],
        [{ body: 'x', side: 'LEFT' }, 'side'],
        [{ body: 'x', path: 'app.txt', line: 1, commit_sha: 'f'.repeat(40) }, 'commit_sha'],
        [{ body: '   ' }, 'body'],
        [{ body: 'x', surprise: 1 }, '(body)'],
      ] as const) {
        const r = await p.api.post(`${c}/comments`, body);
        expect(r.status, JSON.stringify([body, r.body])).to.equal(400);
        expect(r.body.issues.map((i: { path: string }) => i.path).join(','), JSON.stringify(r.body)).to.include(field);
      }

      const mine = await agent.post(`${c}/comments`, { body: 'Agent here.' });
      expect(mine.status, JSON.stringify(mine.body)).to.equal(201);
      expect(mine.body.comment.author).to.include({ kind: 'agent' });
      expect(mine.body.comment.author.session_id).to.equal(cr.origin_session_id);
      const id = ok.body.comment.comment_id;
      const denied = await agent.patch(`${c}/comments/${id}`, { resolved: true });
      expect(denied.status).to.equal(403);
      expect(denied.body.code).to.equal('agent_forbidden');
      for (const path of [`${c}/send-to-agent`, `${c}/reviewed`]) expect((await agent.post(path, {})).status, path).to.equal(403);

      const resolved = await p.api.patch(`${c}/comments/${id}`, { resolved: true });
      expect(resolved.status).to.equal(200);
      expect(resolved.body.comment).to.include({ resolved: true, resolved_by: p.srv.userId });
      expect((await p.api.patch(`${c}/comments/${id}`, { resolved: 'yes' })).status).to.equal(400);
      expect((await p.api.patch(`${c}/comments/00000000-0000-4000-8000-000000000000`, { resolved: true })).status).to.equal(404);
      const list = (await p.api.get(`${c}/comments`)).body.comments as { body: string; resolved: boolean }[];
      expect(list.map((x) => x.body)).to.deep.equal(['Why three?', 'the old line', 'Looks fine otherwise.', 'Agent here.']);

      // As of before the resolution, the comment was open; the CR itself is unchanged by comments.
      const evs = (await p.api.get(`${c}/events`)).body.events as { type: string; recorded_at: string }[];
      const at = evs.find((e) => e.type === 'ChangeRequestCommentResolved')!.recorded_at;
      const before = (await p.api.get(`${c}/comments?as_of=${encodeURIComponent(new Date(Date.parse(at) - 1).toISOString())}`)).body.comments;
      expect(before.find((x: { comment_id: string }) => x.comment_id === id).resolved).to.equal(false);
      expect((await p.api.get(`${c}?as_of=${encodeURIComponent(new Date().toISOString())}`)).body.change_request.updated_at).to.equal(cr.updated_at);
      const types = (await p.api.get(`${c}/events`)).body.events.map((e: { type: string }) => e.type);
      expect(types).to.include.members(['ChangeRequestCommented', 'ChangeRequestCommentResolved']);
      const verify = await rebuildProjections(p.srv.db.db, { verify: true });
      expect(verify.differences).to.deep.equal([]);
      await p.api.patch(`${c}/comments/${id}`, { resolved: false });
      await rebuildProjections(p.srv.db.db, { verify: false });
      expect((await rebuildProjections(p.srv.db.db, { verify: true })).differences).to.deep.equal([]);
      expect(((await p.api.get(`${c}/comments`)).body.comments as { resolved: boolean }[]).map((x) => x.resolved)).to.deep.equal([false, false, false, false]);

      // A second tenant: 404 on read and write.
      const other = await p.srv.newUser('other@example.test');
      const them = client(p.srv.url, other.token);
      for (const r of [await them.get(`${c}/comments`), await them.post(`${c}/comments`, { body: 'hi' }), await them.patch(`${c}/comments/${id}`, { resolved: true }), await them.post(`${c}/send-to-agent`, {})]) {
        expect(r.status).to.equal(404);
      }
    }));

  it('sends unresolved comments to the origin session as one prompt; the agent answers the round; changes since the last review', () =>
    withSessionProject({ slug: 'send' }, async (p) => {
      const { s, agent, c, head } = await sessionCr(p);
      expect((await p.api.post(`${c}/send-to-agent`, {})).body.code, 'nothing to send yet').to.equal('nothing_to_send');
      await p.api.post(`${c}/comments`, { body: 'Rename <b>three</b> to "3"', path: 'app.txt', line: 3 });
      await p.api.post(`${c}/comments`, { body: 'And add a test.' });
      const sent = await p.api.post(`${c}/send-to-agent`, {});
      expect(sent.status, JSON.stringify(sent.body)).to.equal(202);
      expect(sent.body).to.include({ round: 1, session_id: s.session_id, delivery: 'prompted', head_sha: head });
      expect(sent.body.items).to.have.length(2);
      const texts = await prompts(p, s.session_id);
      expect(texts).to.have.length(1);
      expect(texts[0]).to.include('Rename <b>three</b> to "3"').and.include('`app.txt` line 3').and.include('And add a test.').and.include(`svc cr comment 1`);

      // The agent pushes a fix and answers once: its comment answers round 1.
      const fix = await p.repo.commit(s.session_id, { 'app.txt': 'one\ntwo\n3\n' });
      const answer = await agent.post(`${c}/comments`, { body: 'Renamed it.' });
      expect(answer.body.comment.answers_round).to.equal(1);
      expect((await agent.post(`${c}/comments`, { body: 'PS' })).body.comment.answers_round, 'answered once').to.equal(null);

      // The reviewer's last comment was at `head`: the fix is the change since.
      const review = (await p.api.get(`${c}/review`)).body.review;
      expect(review).to.include({ reviewed_head_sha: head, head_sha: fix, changed: true });
      expect(review.changes.files.map((f: { path: string }) => f.path)).to.deep.equal(['app.txt']);
      const marked = (await p.api.post(`${c}/reviewed`, {})).body.review;
      expect(marked).to.include({ reviewed_head_sha: fix, changed: false, changes: null });

      // A second round while it runs goes to the same agent conversation (queued behind a run there).
      const second = await p.api.post(`${c}/send-to-agent`, {});
      expect(second.body).to.include({ round: 2, delivery: 'prompted' });
      const runtime = (await p.api.get(`${p.sessions}/${s.session_id}/agent/fake/state`)).body.prompts as { session_id: string }[];
      expect(runtime).to.have.length(2);
      expect(runtime[1]!.session_id).to.equal(runtime[0]!.session_id);

      // A stopped session is restarted and gets the prompt once its agent is ready.
      await p.api.post(`${p.sessions}/${s.session_id}/stop`, {});
      await waitForStatus(p.api, `${p.sessions}/${s.session_id}`, ['stopped']);
      const again = await p.api.post(`${c}/send-to-agent`, {});
      expect(again.status, JSON.stringify(again.body)).to.equal(202);
      expect(again.body).to.include({ round: 3, delivery: 'restarted' });
      await waitForStatus(p.api, `${p.sessions}/${s.session_id}`, ['running']);
      await agentReady(p.api, `${p.sessions}/${s.session_id}/agent/fake/state`);
      await until(async () => (await prompts(p, s.session_id)).length === 1, 'the prompt reached the restarted session');
      expect((await prompts(p, s.session_id))[0]).to.include('And add a test.');

      // A removed session: 409 origin_session_gone.
      await p.api.call("DELETE", `${p.sessions}/${s.session_id}`);
      const gone = await p.api.post(`${c}/send-to-agent`, {});
      expect(gone.status).to.equal(409);
      expect(gone.body.code).to.equal('origin_session_gone');
    }));

  it('a stopped origin session over the account\'s cap: 429 with Retry-After, nothing recorded', () =>
    withSessionProject({ slug: 'cap', env: { SVC_SESSION_CAP: '1' } }, async (p) => {
      const { s, c } = await sessionCr(p);
      await p.api.post(`${c}/comments`, { body: 'Fix it.' });
      await p.api.post(`${p.sessions}/${s.session_id}/stop`, {});
      await waitForStatus(p.api, `${p.sessions}/${s.session_id}`, ['stopped']);
      expect((await p.api.post(p.sessions, {})).status, 'another session takes the one slot').to.equal(201);
      const r = await p.api.call('POST', `${c}/send-to-agent`, {});
      expect(r.status, JSON.stringify(r.body)).to.equal(429);
      expect(r.body.limit).to.equal(1);
      expect(r.headers.get('retry-after')).to.equal('30');
      const types = (await p.api.get(`${c}/events`)).body.events.map((e: { type: string }) => e.type);
      expect(types).to.not.include('ChangeRequestSentToAgent');
    }));

  it('409 for a CR no session opened, or whose head is not its session branch', () =>
    withSessionProject({ slug: 'nosess' }, async (p) => {
      await p.repo.commit('feature', { 'f.txt': 'f\n' });
      const cr = (await p.api.post(p.base, { title: 'Person work', head_ref: 'feature' })).body.change_request;
      await p.api.post(`${p.base}/${cr.number}/comments`, { body: 'hm' });
      const r = await p.api.post(`${p.base}/${cr.number}/send-to-agent`, {});
      expect(r.status).to.equal(409);
      expect(r.body.code).to.equal('no_origin_session');
      const s = (await p.api.post(p.sessions, {})).body.session;
      await waitForStatus(p.api, `${p.sessions}/${s.session_id}`, ['running']);
      const other = (await p.api.post(p.base, { title: 'Other head', head_ref: 'feature', session_id: s.session_id })).body.change_request;
      await p.api.post(`${p.base}/${other.number}/comments`, { body: 'hm' });
      const h = await p.api.post(`${p.base}/${other.number}/send-to-agent`, {});
      expect(h.status).to.equal(409);
      expect(h.body.code).to.equal('head_not_session_branch');
    }));
});
