import { expect } from 'chai';
import { existsSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { projectRoot } from '../../../lib/paths.js';
import { runSvc, sandbox, type Sandbox } from '../../cli/helpers.js';
import { bashStep as bash, messageText as textOf, phasedScript, startScriptedModel, type ScriptedModel, type ScriptedStep } from '../../support/scripted-model.js';
import { withSessionProject } from '../../support/sessions.js';
import { skipUnlessCi } from '../../support/skip.js';
import { until } from '../../support/wait.js';

/**
 * Review back to the session, end to end: the real `opencode serve` in a
 * process sandbox, driven by the scripted model through the server's gateway, opens a CR;
 * a person comments on a line with `svc cr comment` and runs `svc cr send-to-agent`; the
 * agent receives one prompt holding the comment, pushes a fix to the same branch and
 * answers once with `svc cr comment` (as the agent of its session); "changes since your
 * last review" shows the fix.
 */
const K = 'sk-upstream-review-1a2b3c';
const COMMENT = 'Please write the digit 3 instead of "three" <here>';

describe('send to agent: a line comment goes to the session, the agent fixes and answers once (e2e, scripted model)', function () {
  this.timeout(300_000);
  const opencode = path.join(projectRoot, 'node_modules', '.bin', 'opencode');
  let model: ScriptedModel;
  let sb: Sandbox;
  before(async function () {
    if (!existsSync(opencode)) skipUnlessCi(this, `${opencode} is not installed`);
    const svc = 'PATH="$(dirname "$HOME")/bin:$PATH" svc';
    const first: ScriptedStep[] = [
      bash("printf 'one\\ntwo\\nthree\\n' > app.txt && git add app.txt && git commit -q -m 'Add app.txt' && git push -q origin HEAD && echo pushed"),
      bash(`${svc} cr open --title "Agent change" --json`),
      { text: 'Opened the change request.' },
    ];
    const fix: ScriptedStep[] = [
      bash("sed -i 's/^three$/3/' app.txt && git commit -q -am 'Use the digit 3' && git push -q origin HEAD && echo pushed"),
      bash(`${svc} cr comment 1 --body "Changed three to 3 in app.txt."`),
      { text: 'Fixed and answered.' },
    ];
    model = await startScriptedModel({
      key: K,
      models: ['scripted'],
      // The phase is the last user message: the first prompt, or the review round.
      script: phasedScript((ask) => (ask.includes('Review feedback on change request') ? fix : first)),
    });
    sb = await sandbox();
  });
  after(async () => {
    await model?.close();
    await sb?.cleanup();
  });

  it('person comments on a line, sends to agent; the agent pushes a fix and answers as one comment; changes since the last review', () =>
    withSessionProject(
      { slug: 'rloop', env: { SVC_SANDBOX_PROVIDER: 'process', SVC_AGENT_RUNTIME: opencode, SVC_LLM_UPSTREAM_URL: model.url, SVC_LLM_UPSTREAM_KEY: K, SVC_LLM_MODEL: 'scripted', SVC_SESSION_PROVISION_TIMEOUT_SECONDS: '180' } },
      async (p) => {
        const env = { SVC_API_URL: `${p.srv.url}/v1`, SVC_CLI_TOKEN: p.srv.token, SVC_PROJECT_ID: 'rloop' };
        const svc = (args: string[]) => runSvc(args, { configPath: sb.configPath, cwd: sb.dir, env });
        const chat = await svc(['sessions', 'chat', '--new', '--prompt', 'Add app.txt and open a change request']);
        expect(chat.code, `${chat.stderr}\n${chat.stdout}`).to.equal(0);
        const id = /Created session ([0-9a-f-]{36})/.exec(chat.stderr)![1]!;
        const cr = (await p.api.get(`${p.base}/1`)).body.change_request;
        expect(cr).to.include({ head_ref: id, origin_session_id: id });
        const before = p.repo.tip(id)!;
        expect(cr.head_commit_sha).to.equal(before);

        const commented = await svc(['cr', 'comment', '1', '--body', COMMENT, '--path', 'app.txt', '--line', '3']);
        expect(commented.code, commented.stderr).to.equal(0);
        const sent = await svc(['cr', 'send-to-agent', '1', '--json']);
        expect(sent.code, sent.stderr).to.equal(0);
        expect(JSON.parse(sent.stdout)).to.include({ round: 1, session_id: id, delivery: 'prompted' });

        // The agent's answer arrives as one comment, authored as the agent of that session.
        const agentComments = async () => ((await p.api.get(`${p.base}/1/comments`)).body.comments as any[]).filter((c) => c.author.kind === 'agent');
        await until(async () => (await agentComments()).length > 0, "the agent's answer");
        const [answer, ...more] = await agentComments();
        expect(more).to.deep.equal([]);
        expect(answer).to.include({ body: 'Changed three to 3 in app.txt.', answers_round: 1 });
        expect(answer.author).to.deep.equal({ kind: 'agent', user_id: p.srv.userId, session_id: id });

        // One prompt held the comment (with where it is), in the conversation the agent ran.
        const prompted = model.agentTurns().filter((r) => JSON.stringify(r.body.messages).includes('Review feedback on change request #1'));
        expect(prompted.length).to.be.at.least(1);
        const userTexts = (prompted[0]!.body.messages as any[]).filter((m) => m.role === 'user').map(textOf);
        const round = userTexts.find((t) => t.includes('Review feedback'))!;
        expect(round).to.include('`app.txt` line 3').and.include(COMMENT);

        // The fix is on the same branch, and is what changed since the reviewer's comment.
        const after = p.repo.tip(id)!;
        expect(after).to.not.equal(before);
        expect(execFileSync('git', ['--git-dir', p.repo.bare, 'show', `${after}:app.txt`], { encoding: 'utf8' })).to.equal('one\ntwo\n3\n');
        const review = (await p.api.get(`${p.base}/1/review`)).body.review;
        expect(review).to.include({ reviewed_head_sha: before, head_sha: after, changed: true });
        expect(review.changes.patch).to.include('+3');
        const show = await svc(['cr', 'show', '1']);
        expect(show.stdout).to.include('Changed three to 3 in app.txt.').and.include('answers round 1');

        await p.api.post(`${p.sessions}/${id}/stop`, {});
      },
    ));
});
