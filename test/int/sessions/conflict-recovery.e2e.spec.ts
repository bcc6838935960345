import { expect } from 'chai';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../../../lib/paths.js';
import { probeBwrap } from '../../../infra/sandbox/bwrap.js';
import { DEFAULT_SANDBOX_IMAGE } from '../../../infra/sandbox/docker.js';
import { runSvc, sandbox, type Sandbox } from '../../cli/helpers.js';
import { bashStep as bash, phasedScript, startScriptedModel, type ScriptedModel, type ScriptedStep } from '../../support/scripted-model.js';
import { withSessionProject } from '../../support/sessions.js';
import { skipUnlessCi } from '../../support/skip.js';
import { until } from '../../support/wait.js';

/**
 * The conflict-recovery path of the agent loop, driven through the
 * runtime's own tools: the agent's CR conflicts after a person moves the base; asked to
 * resolve, the agent merges the base into its branch, resolves, pushes, and the CR's merge
 * preview turns clean, and a person merges it. The real runtime, the scripted model
 * through the server's gateway, on process, bwrap and docker.
 */
const K = 'sk-upstream-conflict-K';

describe('the agent loop: a conflicting CR recovered by the agent (e2e)', function () {
  this.timeout(480_000);
  const opencode = path.join(projectRoot, 'node_modules', '.bin', 'opencode');
  let model: ScriptedModel;
  let sb: Sandbox;
  before(async function () {
    if (!existsSync(opencode)) skipUnlessCi(this, `${opencode} is not installed`);
    const plans: Record<'open' | 'resolve', ScriptedStep[]> = {
      open: [
        bash("printf 'from the agent\\n' > shared.txt && git commit -q -am 'Agent edits shared.txt' && git push -q origin HEAD && svc cr open --title 'Agent edit' --json"),
        { text: 'Opened the change request.' },
      ],
      resolve: [
        // What the dashboard's conflict help says: merge the base into the branch, resolve, push.
        bash("git pull -q --no-rebase origin main; printf 'from the agent\\nfrom the person\\n' > shared.txt && git add shared.txt && git commit -q -m 'Merge main; resolve shared.txt' && git push -q origin HEAD && echo resolved"),
        { text: 'Merged main into the branch and resolved the conflict.' },
      ],
    };
    model = await startScriptedModel({
      key: K,
      models: ['scripted'],
      script: phasedScript((ask) => (/conflict/i.test(ask) ? plans.resolve : plans.open)),
    });
    sb = await sandbox();
  });
  after(async () => {
    await model?.close();
    await sb?.cleanup();
  });

  for (const provider of ['process', 'bwrap', 'docker'] as const) {
    it(`${provider}: the agent merges the moved base into its branch, resolves, pushes; the preview turns clean and a person merges`, function () {
      if (provider === 'bwrap') {
        const probe = probeBwrap();
        if (!probe.ok) skipUnlessCi(this, `bwrap: ${probe.reason}`);
      }
      if (provider === 'docker') {
        if (spawnSync('docker', ['info'], { encoding: 'utf8' }).status !== 0) skipUnlessCi(this, 'no Docker engine here');
        if (spawnSync('docker', ['image', 'inspect', DEFAULT_SANDBOX_IMAGE], { encoding: 'utf8' }).status !== 0) skipUnlessCi(this, `image ${DEFAULT_SANDBOX_IMAGE} is missing: build it with ops/sandbox-image.sh`);
      }
      return withSessionProject(
        // docker runs the image's own opencode (on its PATH); the others the install's.
        { slug: 'recover', env: { SVC_SANDBOX_PROVIDER: provider, SVC_AGENT_RUNTIME: provider === 'docker' ? 'opencode' : opencode, SVC_LLM_UPSTREAM_URL: model.url, SVC_LLM_UPSTREAM_KEY: K, SVC_LLM_MODEL: 'scripted', SVC_SESSION_PROVISION_TIMEOUT_SECONDS: '240' } },
        async (p) => {
          await p.repo.commit('main', { 'shared.txt': 'base\n' });
          const env = { SVC_API_URL: `${p.srv.url}/v1`, SVC_CLI_TOKEN: p.srv.token, SVC_PROJECT_ID: 'recover' };
          const chat = (args: string[]) => runSvc(['sessions', 'chat', ...args], { configPath: sb.configPath, cwd: sb.dir, env });
          const first = await chat(['--new', '--prompt', 'Change shared.txt and open a change request']);
          expect(first.code, `${first.stderr}\n${first.stdout}`).to.equal(0);
          const id = /Created session ([0-9a-f-]{36})/.exec(first.stderr)![1]!;
          const cr = ((await p.api.get(p.base)).body.change_requests as any[]).find((c) => c.origin_session_id === id);
          expect(cr, 'the agent opened a CR').to.not.equal(undefined);

          // A person moves the base: the CR now conflicts.
          await p.repo.commit('main', { 'shared.txt': 'from the person\n' });
          const conflicted = (await p.api.get(`${p.base}/${cr.number}/merge-preview`)).body;
          expect(conflicted).to.include({ can_merge: false });
          expect(conflicted.conflicts).to.deep.equal(['shared.txt']);

          // Asked to, the agent recovers in its own clone.
          const second = await chat([id, '--prompt', 'The change request has a merge conflict with main: merge main into your branch, resolve it and push.']);
          expect(second.code, `${second.stderr}\n${second.stdout}`).to.equal(0);
          expect(second.stdout).to.include('resolved the conflict');
          const clean = (await p.api.get(`${p.base}/${cr.number}/merge-preview`)).body;
          expect(clean, JSON.stringify(clean)).to.include({ can_merge: true, is_up_to_date: false });
          expect(clean.conflicts).to.deep.equal([]);
          const bare = (...args: string[]) => execFileSync('git', ['--git-dir', p.repo.bare, ...args], { encoding: 'utf8' }).trim();
          const head = p.repo.tip(id)!;
          expect(bare('cat-file', '-p', head).match(/^parent /gm), 'the agent made a merge commit').to.have.length(2);

          // The agent cannot merge; a person does, and main holds both lines.
          const merged = await p.api.post(`${p.base}/${cr.number}/merge`, {});
          expect(merged.status, JSON.stringify(merged.body)).to.equal(200);
          expect(bare('show', `${merged.body.change_request.merge_commit_sha}:shared.txt`)).to.equal('from the agent\nfrom the person');
          // Stopped through the server, so that no provider's sandbox outlives the test.
          await p.api.post(`${p.sessions}/${id}/stop`, {});
          await until(async () => (await p.api.get(`${p.sessions}/${id}`)).body.session.status === 'stopped', 'the session stopped');
        },
      );
    });
  }
});
