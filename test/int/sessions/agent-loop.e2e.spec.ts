import { expect } from 'chai';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../../../lib/paths.js';
import { probeBwrap } from '../../../infra/sandbox/bwrap.js';
import { DEFAULT_SANDBOX_IMAGE } from '../../../infra/sandbox/docker.js';
import { runSvc, sandbox, type Sandbox } from '../../cli/helpers.js';
import { bashStep, startScriptedModel, type ScriptedModel } from '../../support/scripted-model.js';
import { withSessionProject } from '../../support/sessions.js';
import { skipUnlessCi } from '../../support/skip.js';
import { until } from '../../support/wait.js';

/**
 * The agent loop end to end, on the process, bwrap and docker providers: `svc sessions chat --new --prompt`
 * → the real `opencode serve` in the sandbox → the server's model gateway → the scripted
 * model (the upstream, requiring key K), whose tool calls make the runtime's own `bash`
 * tool edit, commit, `git push origin HEAD` and `svc cr open`. Nothing here stands in for
 * the agent: every change comes from the runtime executing what the model asked.
 */
const K = 'sk-upstream-K-9f8e7d6c5b4a';

function filesUnder(dir: string, out: string[] = []): string[] {
  for (const name of existsSync(dir) ? readdirSync(dir) : []) {
    const p = path.join(dir, name);
    const st = statSync(p, { throwIfNoEntry: false });
    if (st?.isDirectory()) filesUnder(p, out);
    else if (st?.isFile() && st.size < 50_000_000) out.push(p);
  }
  return out;
}

function readIfThere(f: string): Buffer | null {
  try {
    return readFileSync(f);
  } catch {
    return null;
  }
}

/** The text of every tool result in a conversation (OpenAI `role: tool` messages). */
function toolOutputs(messages: { role: string; content: unknown }[]): string {
  return messages
    .filter((m) => m.role === 'tool')
    .map((m) => (typeof m.content === 'string' ? m.content : JSON.stringify(m.content)))
    .join('\n');
}

describe('the agent loop: chat → scripted model through the gateway → edit, commit, push, CR (e2e)', function () {
  this.timeout(480_000);
  const opencode = path.join(projectRoot, 'node_modules', '.bin', 'opencode');
  let model: ScriptedModel;
  let sb: Sandbox;
  before(async function () {
    if (!existsSync(opencode)) skipUnlessCi(this, `${opencode} is not installed`);
    const bash = (command: string) => bashStep(command, { prompt_tokens: 1000, completion_tokens: 50 });
    model = await startScriptedModel({
      key: K,
      models: ['scripted'],
      script: [
        // What the agent's login shell sees (Debian's /etc/profile resets PATH): `svc` is on it.
        bash("bash -l -c 'command -v svc' && echo svc-on-path"),
        bash("printf 'made by the agent\\n' > agent.txt && git add agent.txt && git commit -q -m 'Add agent.txt' && git log -1 --format='%an <%ae>'"),
        bash('git push -q origin HEAD && echo pushed'),
        bash('svc cr open --title "Agent change" --json'),
        { text: 'Opened the change request.', usage: { prompt_tokens: 1200, completion_tokens: 20 } },
      ],
    });
    sb = await sandbox();
  });
  after(async () => {
    await model?.close();
    await sb?.cleanup();
  });

  for (const provider of ['process', 'bwrap', 'docker'] as const) {
    it(`${provider}: the CR is opened by the agent, its commit carries the agent identity, K never enters the sandbox`, function () {
      if (provider === 'bwrap') {
        const probe = probeBwrap();
        if (!probe.ok) skipUnlessCi(this, `bwrap: ${probe.reason}`);
      }
      if (provider === 'docker') {
        if (spawnSync('docker', ['info'], { encoding: 'utf8' }).status !== 0) skipUnlessCi(this, 'no Docker engine here');
        if (spawnSync('docker', ['image', 'inspect', DEFAULT_SANDBOX_IMAGE], { encoding: 'utf8' }).status !== 0) skipUnlessCi(this, `image ${DEFAULT_SANDBOX_IMAGE} is missing: build it with ops/sandbox-image.sh`);
      }
      model.requests.length = 0;
      // docker runs the image's own opencode (on its PATH); the others the install's.
      const runtime = provider === 'docker' ? 'opencode' : opencode;
      return withSessionProject(
        { slug: 'loop', env: { SVC_SANDBOX_PROVIDER: provider, SVC_AGENT_RUNTIME: runtime, SVC_LLM_UPSTREAM_URL: model.url, SVC_LLM_UPSTREAM_KEY: K, SVC_LLM_MODEL: 'scripted', SVC_SESSION_PROVISION_TIMEOUT_SECONDS: '180' } },
        async (p) => {
          const t0 = Date.now();
          const r = await runSvc(['sessions', 'chat', '--new', '--prompt', 'Add agent.txt and open a change request'], {
            configPath: sb.configPath,
            cwd: sb.dir,
            env: { SVC_API_URL: `${p.srv.url}/v1`, SVC_CLI_TOKEN: p.srv.token, SVC_PROJECT_ID: 'loop' },
          });
          const ms = Date.now() - t0;
          expect(r.code, `${r.stderr}\n${r.stdout}`).to.equal(0);
          expect(r.stdout).to.include('Opened the change request.');
          const id = /Created session ([0-9a-f-]{36})/.exec(r.stderr)![1]!;

          // The CR, opened from inside the sandbox, names its session; the commit is the agent's.
          const crs = (await p.api.get('/v1/projects/loop/change-requests')).body.change_requests as any[];
          expect(crs).to.have.length(1);
          expect(crs[0]).to.include({ title: 'Agent change', head_ref: id, base_ref: 'main', origin_session_id: id });
          expect(crs[0].head_commit_sha).to.equal(p.repo.tip(id));
          const who = execFileSync('git', ['--git-dir', p.repo.bare, 'log', '-1', '--format=%an|%ae|%cn|%ce|%s', id], { encoding: 'utf8' }).trim();
          expect(who).to.equal(`Owner (svc agent)|agent+${id}@127.0.0.1|Owner (svc agent)|agent+${id}@127.0.0.1|Add agent.txt`);

          // Every model call went through the gateway with K; no sandbox key reached the upstream.
          const turns = model.agentTurns();
          expect(turns.length).to.be.at.least(5);
          // The login shell found `svc` (the tool's output, as the model got it back).
          const onPath = toolOutputs(turns[1]!.body.messages);
          expect(onPath, onPath).to.match(/\/svc\s+svc-on-path/);
          for (const req of model.requests) {
            expect(req.headers.authorization).to.equal(`Bearer ${K}`);
            expect(req.raw + JSON.stringify(req.headers)).to.not.match(/svc_(llm|sbx|pat)_/);
          }
          expect(JSON.stringify(turns.at(-1)!.body.messages)).to.include('pushed');

          // Usage as the model reported it, per session.
          const info = (await p.api.get(`${p.sessions}/${id}`)).body.session;
          expect(info.agent_state).to.equal('ready');
          expect(info.usage.input_tokens).to.be.at.least(4200);
          expect(info.usage.by_model.map((m: { model: string }) => m.model)).to.deep.equal(['scripted']);
          const cli = await runSvc(['sessions', 'info', id, '--json'], { configPath: sb.configPath, cwd: sb.dir, env: { SVC_API_URL: `${p.srv.url}/v1`, SVC_CLI_TOKEN: p.srv.token, SVC_PROJECT_ID: 'loop' } });
          // The sandbox still runs: its time grows between the two reads, the rest is the same.
          const untimed = (u: { sandbox_seconds: number; by_change_request: { sandbox_seconds: number }[] }) => ({ ...u, sandbox_seconds: 0, by_change_request: u.by_change_request.map((c) => ({ ...c, sandbox_seconds: 0 })) });
          expect(untimed(JSON.parse(cli.stdout).usage)).to.deep.equal(untimed(info.usage));
          expect(JSON.parse(cli.stdout).usage.sandbox_seconds).to.be.at.least(info.usage.sandbox_seconds);

          // K is in no sandbox's environment, file or log.
          const row = (await p.srv.db.db.one<{ ref: string; sandbox_id: string }>({ text: "SELECT ref, sandbox_id FROM session_sandboxes WHERE session_id = $1 AND state = 'active'", values: [id] }))!;
          if (provider === 'docker') {
            // The container's environment (as the engine keeps it) and every file under the sandbox's dirs and its log.
            expect(execFileSync('docker', ['inspect', row.ref], { encoding: 'utf8' })).to.not.include(K);
            expect(execFileSync('docker', ['logs', row.ref], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })).to.not.include(K);
            const grep = spawnSync('docker', ['exec', row.ref, 'grep', '-rlF', K, '/workspace', '/opt/svc/home', '/tmp'], { encoding: 'utf8' });
            expect(grep.status, `${grep.stdout}${grep.stderr}`).to.equal(1); // 1: no match, 2: an error
            expect(spawnSync('docker', ['exec', row.ref, 'ls', '/opt/svc/home/.npm'], { encoding: 'utf8' }).status).to.not.equal(0);
          }
          const pid = Number(String(row.ref).split(':')[0]);
          if (pid > 1 && existsSync(`/proc/${pid}/environ`)) expect(readFileSync(`/proc/${pid}/environ`, 'utf8')).to.not.include(K);
          const files = filesUnder(path.join(p.srv.dataDir, 'sandboxes', row.sandbox_id));
          if (provider !== 'docker') expect(files.length).to.be.greaterThan(0); // docker's host dir holds only sockets
          // Nothing was downloaded by the runtime (no npm cache in its HOME), and the workspace holds only the agent's work.
          expect(files.filter((f) => f.includes(`${path.sep}.npm${path.sep}`))).to.deep.equal([]);
          // (Files the runtime is writing may go while we read: those are skipped.)
          for (const f of files) expect(readIfThere(f)?.includes(K) ?? false, f).to.equal(false);
          // The closing note's measure: create → CR opened, next to the runtime's boot.
          const evs = (await p.api.get(`${p.sessions}/${id}/events`)).body.events as { type: string; recorded_at: string }[];
          const at = (t: string) => Date.parse(evs.find((e) => e.type === t)!.recorded_at);
          console.log(`      ${provider}: chat --new → CR opened in ${ms} ms; created → running ${at('SessionRunning') - at('SessionCreated')} ms, runtime boot (running → agent ready) ${at('SessionAgentReady') - at('SessionRunning')} ms`);
          // Stopped through the server, so that no provider's sandbox outlives the test.
          await p.api.post(`${p.sessions}/${id}/stop`, {});
          await until(async () => (await p.srv.db.db.one<{ state: string }>({ text: 'SELECT state FROM session_sandboxes WHERE sandbox_id = $1', values: [row.sandbox_id] }))?.state === 'stopped', 'the sandbox stopped');
          if (provider === 'docker') await until(() => spawnSync('docker', ['inspect', row.ref]).status !== 0, 'the container removed');
        },
      );
    });
  }
});
