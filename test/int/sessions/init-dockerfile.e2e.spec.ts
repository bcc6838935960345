import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { appendFile, readFile } from 'node:fs/promises';
import path from 'node:path';
import { DEFAULT_SANDBOX_IMAGE } from '../../../infra/sandbox/docker.js';
import { runSvc, sandbox, type Sandbox } from '../../cli/helpers.js';
import { startScriptedModel, type ScriptedModel } from '../../support/scripted-model.js';
import { withSessionProject } from '../../support/sessions.js';
import { skipUnlessCi } from '../../support/skip.js';
import { until } from '../../support/wait.js';

/**
 * A docker session from the Dockerfile `svc init` writes (`ARG SVC_SANDBOX_IMAGE=svc-sandbox:local`):
 * committed to the project's repo, built by the docker provider as the project's image (on
 * the install's image, nothing pulled), and the session's agent boots from it and answers.
 */
describe("a docker session from svc init's Dockerfile (e2e)", function () {
  this.timeout(480_000);
  let model: ScriptedModel;
  let sb: Sandbox;
  before(async function () {
    if (spawnSync('docker', ['info'], { encoding: 'utf8' }).status !== 0) skipUnlessCi(this, 'no Docker engine here');
    if (spawnSync('docker', ['image', 'inspect', DEFAULT_SANDBOX_IMAGE], { encoding: 'utf8' }).status !== 0) skipUnlessCi(this, `image ${DEFAULT_SANDBOX_IMAGE} is missing: build it with ops/sandbox-image.sh`);
    model = await startScriptedModel({ key: 'sk-init-K', models: ['scripted'], script: [{ text: 'Hello from the init image.' }] });
    sb = await sandbox();
  });
  after(async () => {
    await model?.close();
    await sb?.cleanup();
  });

  it('builds on the install image (its ARG default too, without a pull) and the session answers', function () {
    const nonce = randomBytes(6).toString('hex');
    return withSessionProject(
      { slug: 'init', env: { SVC_SANDBOX_PROVIDER: 'docker', SVC_AGENT_RUNTIME: 'opencode', SVC_LLM_UPSTREAM_URL: model.url, SVC_LLM_UPSTREAM_KEY: 'sk-init-K', SVC_LLM_MODEL: 'scripted', SVC_SESSION_PROVISION_TIMEOUT_SECONDS: '180' } },
      async (p) => {
        // `svc init` in the project's repository, its Dockerfile marked so the container shows which image it runs.
        const init = await runSvc(['init'], { configPath: sb.configPath, cwd: p.repo.work, env: { HOME: sb.home } });
        expect(init.code, init.stderr).to.equal(0);
        const dockerfile = path.join(p.repo.work, '.svc', 'Dockerfile');
        expect(await readFile(dockerfile, 'utf8')).to.match(/^ARG SVC_SANDBOX_IMAGE=svc-sandbox:local$/m);
        await appendFile(dockerfile, `LABEL svc.test.init=${nonce}\n`);
        p.repo.git('add', '-A');
        p.repo.git('commit', '-q', '-m', 'svc init');
        p.repo.git('push', '-q', 'origin', 'main');

        // The ARG's default names the image the install builds: it builds as it is, no registry asked.
        const own = spawnSync('docker', ['build', '-q', '--pull=false', '--network', 'none', '-t', `svc-init-test:${nonce}`, '-f', dockerfile, path.dirname(dockerfile)], {
          encoding: 'utf8',
          env: { ...process.env, DOCKER_BUILDKIT: '0' },
        });
        expect(own.status, own.stderr).to.equal(0);
        const base = spawnSync('docker', ['image', 'inspect', '-f', '{{.Id}}', DEFAULT_SANDBOX_IMAGE], { encoding: 'utf8' }).stdout.trim();
        const parentLayers = spawnSync('docker', ['image', 'inspect', '-f', '{{json .RootFS.Layers}}', base], { encoding: 'utf8' }).stdout.trim();
        const ownLayers = spawnSync('docker', ['image', 'inspect', '-f', '{{json .RootFS.Layers}}', `svc-init-test:${nonce}`], { encoding: 'utf8' }).stdout.trim();
        expect(ownLayers).to.equal(parentLayers); // LABEL only: the install image's layers, nothing else
        spawnSync('docker', ['image', 'rm', '-f', `svc-init-test:${nonce}`]);

        const env = { SVC_API_URL: `${p.srv.url}/v1`, SVC_CLI_TOKEN: p.srv.token, SVC_PROJECT_ID: 'init' };
        const r = await runSvc(['sessions', 'chat', '--new', '--prompt', 'Say hello'], { configPath: sb.configPath, cwd: sb.dir, env });
        expect(r.code, `${r.stderr}\n${r.stdout}`).to.equal(0);
        expect(r.stdout).to.include('Hello from the init image.');
        const id = /Created session ([0-9a-f-]{36})/.exec(r.stderr)![1]!;

        // The container runs the project's image, built from that Dockerfile.
        const row = (await p.srv.db.db.one<{ ref: string; sandbox_id: string }>({ text: "SELECT ref, sandbox_id FROM session_sandboxes WHERE session_id = $1 AND state = 'active'", values: [id] }))!;
        const info = JSON.parse(spawnSync('docker', ['inspect', row.ref], { encoding: 'utf8' }).stdout)[0];
        expect(info.Config.Image).to.match(/^svc-repo-sandbox:/);
        expect(info.Config.Labels['svc.test.init']).to.equal(nonce);
        expect(info.HostConfig.NetworkMode).to.equal('none');

        await p.api.post(`${p.sessions}/${id}/stop`, {});
        await until(() => spawnSync('docker', ['inspect', row.ref]).status !== 0, 'the container removed');
        spawnSync('docker', ['image', 'rm', '-f', info.Config.Image]);
      },
    );
  });
});
