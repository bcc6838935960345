import { expect } from 'chai';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../../../lib/paths.js';
import { runSvc, sandbox, type Sandbox } from '../../cli/helpers.js';
import { bashStep as bash, messageText as textOf, phasedScript, startScriptedModel, type ScriptedModel, type ScriptedStep } from '../../support/scripted-model.js';
import { withSessionProject } from '../../support/sessions.js';
import { skipUnlessCi } from '../../support/skip.js';
import { until } from '../../support/wait.js';
import { CHECKS_ENV, crEvents, putManifest, settled } from './support.js';

/**
 * Checks and review as one loop, end to end: the real
 * runtime in a process sandbox, the scripted model through the gateway. The agent's CR
 * fails its check on the merge result; a person sends the failure to the session; the
 * agent pushes a fix to the same branch and answers once; the check passes on the new
 * pair; the person asks merge-when-green on the fixed head and it merges exactly once.
 */
const K = 'sk-upstream-checks-loop';

describe('checks and review, one loop: a failing check sent to the agent, fixed, merged when green (e2e, scripted model)', function () {
  this.timeout(480_000);
  const opencode = path.join(projectRoot, 'node_modules', '.bin', 'opencode');
  let model: ScriptedModel;
  let sb: Sandbox;
  before(async function () {
    if (!existsSync(opencode)) skipUnlessCi(this, `${opencode} is not installed`);
    const first: ScriptedStep[] = [
      bash("printf 'work\\n' > work.txt && git add work.txt && git commit -q -m 'Add work.txt' && git push -q origin HEAD && svc cr open --title 'Agent change' --json"),
      { text: 'Opened the change request.' },
    ];
    const fix: ScriptedStep[] = [
      bash("printf 'ok\\n' > ok.txt && git add ok.txt && git commit -q -m 'Add ok.txt for the check' && git push -q origin HEAD && echo pushed"),
      bash('svc cr comment 2 --body "Added ok.txt: the test check passes now."'),
      { text: 'Fixed and answered.' },
    ];
    model = await startScriptedModel({
      key: K,
      models: ['scripted'],
      script: phasedScript((ask) => (ask.includes('Review feedback on change request') ? fix : first)),
    });
    sb = await sandbox();
  });
  after(async () => {
    await model?.close();
    await sb?.cleanup();
  });

  it('the check fails on the agent\'s CR; sent to the agent, fixed and answered; passes on the new pair; merged once when green', () =>
    withSessionProject(
      { slug: 'cloop', env: { ...CHECKS_ENV, SVC_SANDBOX_PROVIDER: 'process', SVC_AGENT_RUNTIME: opencode, SVC_LLM_UPSTREAM_URL: model.url, SVC_LLM_UPSTREAM_KEY: K, SVC_LLM_MODEL: 'scripted', SVC_SESSION_PROVISION_TIMEOUT_SECONDS: '240' } },
      async (p) => {
        await putManifest(p, '[[checks]]\nname = "test"\nrun = "sh check.sh"\ntimeout_minutes = 2\n', { 'check.sh': 'test -f ok.txt || { echo "ok.txt is missing"; exit 3; }\necho all good\n' });
        const base = p.repo.tip('main')!;
        const env = { SVC_API_URL: `${p.srv.url}/v1`, SVC_CLI_TOKEN: p.srv.token, SVC_PROJECT_ID: 'cloop' };
        const svc = (args: string[]) => runSvc(args, { configPath: sb.configPath, cwd: sb.dir, env });

        const chat = await svc(['sessions', 'chat', '--new', '--prompt', 'Add work.txt and open a change request']);
        expect(chat.code, `${chat.stderr}\n${chat.stdout}`).to.equal(0);
        const id = /Created session ([0-9a-f-]{36})/.exec(chat.stderr)![1]!;
        // #1 put the manifest in force; the agent's CR is #2.
        const cr = (await p.api.get(`${p.base}/2`)).body.change_request;
        expect(cr).to.include({ head_ref: id, origin_session_id: id });
        const head1 = p.repo.tip(id)!;
        expect((await settled(p, 2, 'test', { base, head: head1 })).status).to.equal('failed');

        // The person sends the failure; the agent fixes the same branch and answers once.
        const sent = await svc(['cr', 'send-to-agent', '2', '--json']);
        expect(sent.code, sent.stderr).to.equal(0);
        expect(JSON.parse(sent.stdout).items).to.deep.equal([{ kind: 'check', ref: 'test' }]);
        const agentComments = async () => ((await p.api.get(`${p.base}/2/comments`)).body.comments as any[]).filter((c) => c.author.kind === 'agent');
        await until(async () => (await agentComments()).length > 0, "the agent's answer", { timeoutMs: 120_000 });
        expect((await agentComments()).map((c) => c.answers_round)).to.deep.equal([1]);
        const round = model.agentTurns().map((r) => (r.body.messages as any[]).filter((m) => m.role === 'user').map(textOf).find((t) => t.includes('Review feedback'))).find(Boolean)!;
        expect(round).to.include('Check `test` failed (exit 3)').and.include('ok.txt is missing');

        // The check passes on the new pair; merge-when-green on that head merges it, once.
        const head2 = p.repo.tip(id)!;
        expect(head2).to.not.equal(head1);
        expect((await settled(p, 2, 'test', { base, head: head2 })).status).to.equal('passed');
        const asked = await p.api.post(`${p.base}/2/merge`, { when: 'checks_pass', expected_head_sha: head2 });
        expect(asked.status, JSON.stringify(asked.body)).to.be.oneOf([200, 202]);
        await until(async () => (await p.api.get(`${p.base}/2`)).body.change_request.status === 'merged', 'merged when green', { timeoutMs: 60_000 });
        const merged = (await p.api.get(`${p.base}/2`)).body.change_request;
        expect(merged.head_commit_sha).to.equal(head2);
        expect(p.repo.tip('main')).to.equal(merged.merge_commit_sha);
        expect((await crEvents(p, cr.cr_id)).filter((e) => e.type === 'ChangeRequestMerged')).to.have.length(1);
        await p.api.post(`${p.sessions}/${id}/stop`, {});
      },
    ));
});
