import { expect } from 'chai';
import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { projectRoot } from '../../../lib/paths.js';
import { probeBwrap } from '../../../infra/sandbox/bwrap.js';
import { startScriptedModel, type ScriptedModel } from '../../support/scripted-model.js';
import { waitForStatus, withSessionProject, type SessionProject } from '../../support/sessions.js';
import { skipUnlessCi } from '../../support/skip.js';
import { until } from '../../support/wait.js';

/**
 * Pause and resume end to end with the real runtime (opencode) and the scripted model:
 * the agent writes an untracked file and an uncommitted change through
 * its own bash tool, in a sandbox started cold or claimed from the project's pool; the session is stopped by a person, by the idle sweep, or its sandbox
 * is SIGKILLed after a checkpoint; a restart brings both files back and the same
 * conversation continues (the model's next request carries the earlier turns); the session
 * branch is untouched; `--fresh` has neither.
 */
const K = 'sk-upstream-pause-1a2b3c';
const FIRST = 'Write notes/todo.txt and append to README.md, do not commit';

async function sandboxDirs(p: SessionProject, id: string) {
  const row = (await p.srv.db.db.one<{ sandbox_id: string; ref: string }>({
    text: "SELECT sandbox_id, ref FROM session_sandboxes WHERE session_id = $1 AND state = 'active' ORDER BY created_at DESC LIMIT 1",
    values: [id],
  }))!;
  return { sandbox: row.sandbox_id, pid: Number(String(row.ref).split(':')[0]), ws: path.join(p.srv.dataDir, 'sandboxes', row.sandbox_id, 'workspace') };
}

/** What the session looked like, for a wait that gives up (its message then says where it stood). */
const sessionState = (p: SessionProject, one: string) => async () => {
  const s = (await p.api.get(one)).body.session;
  const events = ((await p.api.get(`${one}/events`)).body.events as { type: string }[]).map((e) => e.type);
  return { status: s.status, agent_state: s.agent_state, error: s.error, events: events.slice(-8) };
};
/** A wait in this file: bounded, so a stuck step names itself instead of the test's timeout. */
const bounded = (p: SessionProject, one: string) => ({ timeoutMs: 180_000, maxIntervalMs: 250, state: sessionState(p, one) });

/**
 * Running with its agent ready. Each look also goes through the agent proxy, which is
 * activity: with the idle case's short timeout the sweep must not stop a session whose
 * runtime is still booting on a loaded machine.
 */
async function agentReady(p: SessionProject, one: string): Promise<void> {
  await until(async () => {
    await p.api.get(`${one}/agent/session`);
    const s = (await p.api.get(one)).body.session;
    if (s.status === 'failed' || s.status === 'stopped' || s.agent_state === 'error') throw new Error(`session ${s.status}: ${JSON.stringify(s.error)}`);
    return s.status === 'running' && s.agent_state === 'ready';
  }, 'the agent ready', bounded(p, one));
}

/**
 * A running session with its agent ready; `pooled`: on a project with `[sandbox] pool = 1`,
 * created once its pool sandbox is ready, and started in that very sandbox (a claim).
 */
async function runningSession(p: SessionProject, slug: string, pooled: boolean): Promise<{ id: string; one: string }> {
  let poolSandbox: string | undefined;
  if (pooled) {
    await p.repo.commit('main', { 'svc.toml': '[sandbox]\npool = 1\n' });
    expect((await p.api.get(`/v1/projects/${slug}/manifest`)).status).to.equal(200);
    await until(
      async () => !!(poolSandbox = (await p.srv.db.db.one<{ id: string }>({ text: "SELECT sandbox_id::text AS id FROM pool_sandboxes WHERE state = 'ready' LIMIT 1", values: [] }))?.id),
      'the pool to fill',
      { timeoutMs: 180_000 },
    );
  }
  const created = await p.api.post(p.sessions, {});
  expect(created.status, JSON.stringify(created.body)).to.equal(201);
  const id = created.body.session.session_id as string;
  const one = `${p.sessions}/${id}`;
  await agentReady(p, one);
  if (pooled) expect((await sandboxDirs(p, id)).sandbox, 'the session started in the pool sandbox').to.equal(poolSandbox);
  return { id, one };
}

/** The runtime's conversation `oc` as its API lists it, through the server's proxy. */
const step = (m: string) => void (process.env.PAUSE_DEBUG && console.log(`      ${new Date().toISOString()} ${m}`));
const messages = async (p: SessionProject, one: string, oc: string) => {
  const r = await p.api.get(`${one}/agent/session/${oc}/message`);
  if (process.env.PAUSE_DEBUG) step(`messages ${r.status} ${JSON.stringify(r.body).slice(-300)}`);
  return r.status === 200 ? JSON.stringify(r.body) : '';
};

describe('sessions: pause and resume with the real runtime (e2e)', function () {
  this.timeout(600_000);
  const opencode = path.join(projectRoot, 'node_modules', '.bin', 'opencode');
  let model: ScriptedModel;
  before(async function () {
    if (!existsSync(opencode)) skipUnlessCi(this, `${opencode} is not installed`);
    model = await startScriptedModel({
      key: K,
      models: ['scripted'],
      script: (body, step) => {
        if (step === 0) {
          const command = "mkdir -p notes && printf 'buy milk\\n' > notes/todo.txt && printf 'more, uncommitted\\n' >> README.md && echo written";
          return { tool_calls: [{ name: 'bash', args: { command, description: 'write' } }] };
        }
        if (step === 1) return { text: 'Saved my work.' };
        return { text: `Continuing: I see ${JSON.stringify(body.messages).includes(FIRST) ? 'our earlier turns' : 'nothing before'}.` };
      },
    });
  });
  after(() => model?.close());

  for (const provider of ['process', 'bwrap'] as const) {
    for (const pooled of [false, true]) {
    for (const how of ['person', 'idle', 'kill'] as const) {
      it(`${provider}${pooled ? ', claimed from the pool' : ''}: stopped by ${how === 'kill' ? 'a SIGKILL after a checkpoint' : how === 'idle' ? 'the idle sweep' : 'a person'} → restart restores files and conversation${how === 'person' ? '; --fresh has neither' : ''}`, function () {
        if (provider === 'bwrap') {
          const probe = probeBwrap();
          if (!probe.ok) skipUnlessCi(this, `bwrap: ${probe.reason}`);
        }
        const env: Record<string, string> = {
          SVC_SANDBOX_PROVIDER: provider,
          SVC_AGENT_RUNTIME: opencode,
          SVC_LLM_UPSTREAM_URL: model.url,
          SVC_LLM_UPSTREAM_KEY: K,
          SVC_LLM_MODEL: 'scripted',
          SVC_SESSION_PROVISION_TIMEOUT_SECONDS: '180',
          ...(how === 'kill' ? { SVC_SESSION_WIP_CHECKPOINT_SECONDS: '1' } : {}),
          ...(how === 'idle' ? { SVC_SESSION_IDLE_MINUTES: '0.5' } : {}),
          ...(pooled ? { SVC_SANDBOX_POOL_MAX: '1' } : {}),
        };
        return withSessionProject({ slug: `pause-${how}`, env }, async (p) => {
          const { id, one } = await runningSession(p, `pause-${how}`, pooled);
          step('running');
          const base = p.repo.tip(id);
          const prompt = await p.api.post(`${one}/prompt`, { text: FIRST });
          expect(prompt.status, JSON.stringify(prompt.body)).to.equal(202);
          const oc = prompt.body.session_id as string;
          await until(async () => (await messages(p, one, oc)).includes('Saved my work.'), 'the first turn', bounded(p, one));
          step('first turn done');
          const first = await sandboxDirs(p, id);
          expect(await readFile(path.join(first.ws, 'notes', 'todo.txt'), 'utf8')).to.equal('buy milk\n');

          if (how === 'person') {
            expect((await p.api.post(`${one}/stop`, {})).status).to.equal(200);
          } else if (how === 'idle') {
            // No proxied request from here: the sweep stops it (GETs of the session are not activity).
            await waitForStatus(p.api, one, ['stopped'], 120_000);
            const stopped = (await p.api.get(`${one}/events`)).body.events.find((e: any) => e.type === 'SessionStopped');
            expect(stopped.data.reason).to.equal('idle');
          } else {
            // A change after the turn, so the checkpoint we wait for was taken after it too.
            await writeFile(path.join(first.ws, 'after-turn.txt'), 'x\n');
            const project = (await p.api.get(`/v1/projects/pause-${how}`)).body.project.project_id;
            const store = path.join(p.srv.dataDir, 'repos', 'session-state', `${project}.git`);
            await until(async () => {
              const saved = (await p.api.get(one)).body.session.saved;
              if (!saved?.wip_sha) return false;
              const tree = execFileSync('git', ['--git-dir', store, 'ls-tree', '-r', '--name-only', saved.wip_sha], { encoding: 'utf8' });
              return tree.includes('after-turn.txt') && saved.conversation === true;
            }, 'a checkpoint after the turn', bounded(p, one));
            process.kill(-first.pid, 'SIGKILL');
          }
          step('stopped');
          expect(p.repo.tip(id)).to.equal(base);

          // Restart: the files and the conversation are back, and the agent goes on with it.
          const restarted = await p.api.post(`${one}/restart`, {});
          expect(restarted.status, JSON.stringify(restarted.body)).to.equal(200);
          await agentReady(p, one);
          step('restarted, agent ready');
          const second = await sandboxDirs(p, id);
          expect(second.sandbox).to.not.equal(first.sandbox);
          expect(await readFile(path.join(second.ws, 'notes', 'todo.txt'), 'utf8')).to.equal('buy milk\n');
          expect(await readFile(path.join(second.ws, 'README.md'), 'utf8')).to.equal('fixture\nmore, uncommitted\n');
          // The earlier turns, as the runtime lists them (it may answer 503 for a moment after it reports ready).
          await until(async () => (await messages(p, one, oc)).includes('Saved my work.'), 'the earlier turns', bounded(p, one));
          const events = (await p.api.get(`${one}/events`)).body.events as { type: string; data: any }[];
          // One resume for the one restart (its daemon may read the saved state twice: a quick probe, then after its clone).
          const resumes = events.filter((e) => e.type === 'SessionResumed');
          expect(resumes.map((e) => e.data.sandbox_id)).to.deep.equal([second.sandbox]);
          expect(resumes[0]!.data.conversation).to.equal('restored');
          if (how !== 'kill') expect(events.some((e) => e.type === 'SessionPaused')).to.equal(true);
          step('conversation restored');
          model.requests.length = 0;
          expect((await p.api.post(`${one}/prompt`, { text: 'Go on', session_id: oc })).status).to.equal(202);
          await until(async () => {
            const m = await messages(p, one, oc);
            if (m.includes('Continuing: I see nothing before.')) throw new Error('the model did not see the earlier turns');
            return m.includes('Continuing: I see our earlier turns.');
          }, 'the continued turn', bounded(p, one));
          step('continued');
          expect(p.repo.tip(id)).to.equal(base);

          if (how === 'person') {
            expect((await p.api.post(`${one}/restart`, { fresh: true })).status).to.equal(200);
            await agentReady(p, one);
            const third = await sandboxDirs(p, id);
            expect(existsSync(path.join(third.ws, 'notes', 'todo.txt'))).to.equal(false);
            expect(await readFile(path.join(third.ws, 'README.md'), 'utf8')).to.equal('fixture\n');
            expect((await p.api.get(`${one}/agent/session/${oc}/message`)).status).to.not.equal(200);
          }
          await p.api.post(`${one}/stop`, {});
        });
      });
    }
    }
  }
});
