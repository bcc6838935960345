import { expect } from 'chai';
import { agentReady, waitForStatus, withSessionProject, type SessionProject } from '../../support/sessions.js';
import { CHECKS_ENV, crEvents, putManifest, settled } from '../checks/support.js';
import { until } from '../../support/wait.js';

/**
 * "Send to agent" carries a failing check with the comments: the check's
 * name, its exit and the end of its log (masked as the log route serves it), only for a run
 * on the CR's current head. Process provider, fake runtime (it records the prompts it gets).
 */
describe('send to agent: a failing check goes with the comments', function () {
  this.timeout(180_000);

  const CHECK = `[[checks]]
name = "test"
run = "sh check.sh"
timeout_minutes = 2
secrets = ["API_KEY"]
`;

  const prompts = async (p: SessionProject, id: string) =>
    ((await p.api.get(`${p.sessions}/${id}/agent/fake/state`)).body.prompts as { body: { parts: { text: string }[] } }[]).map((x) => x.body.parts.map((t) => t.text).join(''));

  it('the failing check on the current head is one item of the prompt (its exit and log tail, the secret masked); a fixed head sends nothing', () =>
    withSessionProject({ slug: 'chk-send', env: CHECKS_ENV }, async (p) => {
      const secret = 'sk-check-secret-7f3a91';
      expect((await p.api.call('PUT', `/v1/projects/chk-send/secrets/API_KEY`, { value: secret })).status).to.equal(204);
      await putManifest(p, CHECK, { 'check.sh': 'echo "key is $API_KEY"\ntest -f ok.txt || { echo "ok.txt is missing"; exit 3; }\n' });
      const s = (await p.api.post(p.sessions, {})).body.session;
      await waitForStatus(p.api, `${p.sessions}/${s.session_id}`, ['running']);
      await agentReady(p.api, `${p.sessions}/${s.session_id}/agent/fake/state`);
      const base = p.repo.tip('main')!;
      const head = await p.repo.commit(s.session_id, { 'work.txt': 'work\n' });
      const cr = (await p.api.post(p.base, { title: 'Agent work', head_ref: s.session_id, session_id: s.session_id })).body.change_request;
      const c = `${p.base}/${cr.number}`;
      expect((await settled(p, cr.number, 'test', { base, head })).status).to.equal('failed');

      const sent = await p.api.post(`${c}/send-to-agent`, {});
      expect(sent.status, JSON.stringify(sent.body)).to.equal(202);
      expect(sent.body.items).to.have.length(1);
      const [text] = await prompts(p, s.session_id);
      expect(text).to.include('Check `test` failed (exit 3)').and.include('ok.txt is missing').and.include(head.slice(0, 7));
      expect(text, 'the secret is masked in what the agent reads').to.not.include(secret);

      // The agent's fix passes on the new head: nothing failing, no comment: nothing to send.
      const fixed = await p.repo.commit(s.session_id, { 'ok.txt': 'ok\n' });
      expect((await settled(p, cr.number, 'test', { base, head: fixed })).status).to.equal('passed');
      const none = await p.api.post(`${c}/send-to-agent`, {});
      expect(none.status).to.equal(409);
      expect(none.body.code).to.equal('nothing_to_send');
    }));
  it('send_failures_to_agent: a failure goes to the session by itself, marked automatic, at most max_agent_rounds times', () =>
    withSessionProject({ slug: 'chk-auto', env: CHECKS_ENV }, async (p) => {
      await putManifest(p, `${CHECK.replace('secrets = ["API_KEY"]\n', '')}\n[review]\nsend_failures_to_agent = true\nmax_agent_rounds = 1\n`, { 'check.sh': 'test -f ok.txt || { echo "ok.txt is missing"; exit 3; }\n' });
      const s = (await p.api.post(p.sessions, {})).body.session;
      await waitForStatus(p.api, `${p.sessions}/${s.session_id}`, ['running']);
      await agentReady(p.api, `${p.sessions}/${s.session_id}/agent/fake/state`);
      const base = p.repo.tip('main')!;
      const head = await p.repo.commit(s.session_id, { 'work.txt': 'work\n' });
      const cr = (await p.api.post(p.base, { title: 'Agent work', head_ref: s.session_id, session_id: s.session_id })).body.change_request;
      expect((await settled(p, cr.number, 'test', { base, head })).status).to.equal('failed');
      await until(async () => (await prompts(p, s.session_id)).length === 1, 'the failure sent by itself');
      expect((await prompts(p, s.session_id))[0]).to.include('Check `test` failed (exit 3)');
      const rounds = async () => (await crEvents(p, cr.cr_id)).filter((e) => e.type === 'ChangeRequestSentToAgent').map((e) => e.data);
      await until(async () => (await rounds()).length === 1, 'the round recorded');
      expect((await rounds())[0]).to.include({ round: 1, automatic: true });

      // Still failing on the next head: the one automatic round is spent; a person takes it from here.
      const head2 = await p.repo.commit(s.session_id, { 'more.txt': 'more\n' });
      expect((await settled(p, cr.number, 'test', { base, head: head2 })).status).to.equal('failed');
      const asked = await p.api.post(`${p.base}/${cr.number}/send-to-agent`, {});
      expect(asked.status, 'a person may still send').to.equal(202);
      expect((await rounds()).map((r: any) => r.automatic)).to.deep.equal([true, false]);
    }));
});
