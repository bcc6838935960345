import { expect } from 'chai';
import { chmod } from 'node:fs/promises';
import { PassThrough } from 'node:stream';
import { main } from '../../cli/app.js';
import { chatRuntime } from './support.js';
import { makeFactory, runSvc, sandbox, type Sandbox } from '../cli/helpers.js';
import { withSessionProject, type SessionProject } from '../support/sessions.js';

/** `svc sessions` against a real server whose sandboxes run a scripted opencode-like runtime. */

describe('svc sessions (real server, scripted runtime)', function () {
  this.timeout(120_000);
  let sb: Sandbox;
  beforeEach(async () => {
    sb = await sandbox();
    await chmod(chatRuntime, 0o755);
  });
  afterEach(() => sb.cleanup());

  const envOf = (p: SessionProject) => ({ SVC_API_URL: `${p.srv.url}/v1`, SVC_CLI_TOKEN: p.srv.token, SVC_PROJECT_ID: 'chat' });
  const svc = (p: SessionProject, args: string[], o: { tty?: boolean } = {}) =>
    runSvc(args, { configPath: sb.configPath, cwd: sb.dir, env: envOf(p), ...(o.tty !== undefined ? { tty: o.tty } : {}) });

  it('new waits until running and prints the id; ls, info, open, preview, chat --prompt, restart, rm', () =>
    withSessionProject({ slug: 'chat', env: { SVC_AGENT_RUNTIME: chatRuntime } }, async (p) => {
      const made = await svc(p, ['sessions', 'new']);
      expect(made.code, made.stderr).to.equal(0);
      const id = made.stdout.trim();
      expect(id).to.match(/^[0-9a-f-]{36}$/);
      expect(made.stderr).to.contain(`Created session ${id}`);
      const s = (await p.api.get(`${p.sessions}/${id}`)).body.session;
      expect(s.status).to.equal('running');

      const ls = await svc(p, ['sessions', 'ls']);
      expect(ls.stdout.split('\n')[0]).to.match(new RegExp(`^${id}\\trunning\\t`));
      const lsJson = await svc(p, ['sessions', 'ls', '--json']);
      expect(JSON.parse(lsJson.stdout).map((x: { session_id: string }) => x.session_id)).to.deep.equal([id]);

      const info = await svc(p, ['sessions', 'info', id]);
      expect(info.stdout).to.contain(`status:\trunning`).and.contain(`branch:\t${id}`).and.contain('base:\tmain').and.match(new RegExp(`sandbox_url:\t\\S*/sessions/${id}/agent`));
      expect(info.stdout).to.contain(`url:\t${p.srv.url}/projects/${s.project_id}/sessions/${id}`);

      const open = await svc(p, ['sessions', 'open', id]);
      expect(open.stdout).to.equal(`${p.srv.url}/projects/${s.project_id}/sessions/${id}\n`);
      const preview = await svc(p, ['sessions', 'preview', id, '5173']);
      // The preview's own origin (docs/sessions.md "Previews"), never the dashboard's.
      expect(preview.stdout).to.equal(`http://p5173-${id}.localhost:${new URL(p.srv.url).port}/\n`);
      expect((await svc(p, ['sessions', 'preview', id, '99999'])).code).to.equal(2);

      const chat = await svc(p, ['sessions', 'chat', id, '--prompt', 'hello there']);
      expect(chat.code, chat.stderr).to.equal(0);
      expect(chat.stdout).to.equal('You said: hello there. Done.\n');
      const talk = await svc(p, ['sessions', 'talk', '--prompt', 'again', '--json']);
      expect(talk.code, talk.stderr).to.equal(0);
      const events = talk.stdout.trim().split('\n').map((l) => JSON.parse(l) as { type: string; properties: { delta?: string; status?: { type: string } } });
      expect(events.map((e) => e.type)).to.include('message.part.updated');
      // The turn ends at the runtime's first word that the session is idle.
      expect(events.at(-1)).to.deep.include({ type: 'session.status' });
      expect(events.at(-1)!.properties.status).to.deep.equal({ type: 'idle' });
      expect(events.filter((e) => e.properties.delta).map((e) => e.properties.delta).join('')).to.equal('You said: again. Done.');

      const restarted = await svc(p, ['sessions', 'restart', id]);
      expect(restarted.code, restarted.stderr).to.equal(0);
      expect(restarted.stderr).to.contain('(running)');

      const noYes = await svc(p, ['sessions', 'rm', id]);
      expect(noYes.code).to.equal(2);
      expect(noYes.stderr).to.contain('--yes required');
      const rm = await svc(p, ['sessions', 'rm', id, '--yes']);
      expect(rm.code, rm.stderr).to.equal(0);
      const gone = await svc(p, ['sessions', 'info', id]);
      expect(gone.code).to.equal(1);
      expect(gone.stderr).to.match(/^error: .*not found/im);
    }));

  it('new --agent of an agent the server does not know: exit 2, one stderr line naming the choices, no session', () =>
    withSessionProject({ slug: 'chat', env: { SVC_AGENT_RUNTIME: chatRuntime } }, async (p) => {
      const r = await svc(p, ['sessions', 'new', '--agent', 'nope', '--no-wait']);
      expect(r.code).to.equal(2);
      expect(r.stdout).to.equal('');
      expect(r.stderr.trim().split('\n').filter((l) => l.startsWith('error:'))).to.deep.equal([
        "error: --agent: Unknown agent 'nope': use build, plan or one defined at .svc/agent/agents/<name>.md on main.",
      ]);
      expect((await p.api.get('/v1/projects/chat/sessions')).body.sessions).to.deep.equal([]);
    }));

  it('chat --new --prompt creates the session first and streams the reply', () =>
    withSessionProject({ slug: 'chat', env: { SVC_AGENT_RUNTIME: chatRuntime } }, async (p) => {
      const r = await svc(p, ['sessions', 'chat', '--new', '--prompt', 'build it']);
      expect(r.code, r.stderr).to.equal(0);
      expect(r.stdout).to.equal('You said: build it. Done.\n');
      expect(r.stderr).to.match(/Created session [0-9a-f-]{36}/);
      const none = await runSvc(['sessions', 'chat', '--prompt', 'x'], { configPath: sb.configPath, cwd: sb.dir, env: { ...envOf(p), SVC_PROJECT_ID: 'chat' } });
      expect(none.code).to.equal(0); // the newest running session answers
    }));

  it('chat --new passes --agent and --model to create; chat on a session created otherwise refuses them (exit 2); stop, restart, refresh', () =>
    withSessionProject({ slug: 'chat', env: { SVC_AGENT_RUNTIME: chatRuntime } }, async (p) => {
      const r = await svc(p, ['sessions', 'chat', '--new', '--agent', 'plan', '--model', 'test-model', '--prompt', 'plan it', '--json']);
      expect(r.code, r.stderr).to.equal(0);
      const [s] = (await p.api.get('/v1/projects/chat/sessions')).body.sessions as Array<{ session_id: string; agent: string; model: string | null }>;
      expect(s).to.deep.include({ agent: 'plan', model: 'test-model' });
      const id = s!.session_id;
      const same = await svc(p, ['sessions', 'chat', id, '--agent', 'plan', '--prompt', 'again']);
      expect(same.code, same.stderr).to.equal(0);
      const other = await svc(p, ['sessions', 'chat', id, '--model', 'other-model', '--prompt', 'again']);
      expect(other.code).to.equal(2);
      expect(other.stderr).to.contain('--model other-model (it runs test-model)').and.contain('--new');

      const stop = await svc(p, ['sessions', 'stop', id]);
      expect(stop.code, stop.stderr).to.equal(0);
      expect(stop.stderr).to.contain(`Stopped session ${id} (stopped)`);
      expect((await p.api.get(`${p.sessions}/${id}`)).body.session.status).to.equal('stopped');
      // Refresh needs a running sandbox: the server's 409 is exit 1.
      const stale = await svc(p, ['sessions', 'refresh', id]);
      expect(stale.code).to.equal(1);
      expect((await svc(p, ['sessions', 'restart', id])).code).to.equal(0);
      const refreshed = await svc(p, ['sessions', 'refresh', id, '--json']);
      expect(refreshed.code, refreshed.stderr).to.equal(0);
      expect(JSON.parse(refreshed.stdout).session_id).to.equal(id);
      const after = await svc(p, ['sessions', 'chat', id, '--prompt', 'still there']);
      expect(after.code, after.stderr).to.equal(0);
      expect(after.stdout).to.equal('You said: still there. Done.\n');
    }));

  it('chat shows progress on stderr (a terminal, or --progress; never with --json), and a session error ends it at once (exit 1)', () =>
    withSessionProject({ slug: 'chat', env: { SVC_AGENT_RUNTIME: chatRuntime } }, async (p) => {
      const id = (await svc(p, ['sessions', 'new'])).stdout.trim();
      const tty = await svc(p, ['sessions', 'chat', id, '--prompt', 'use a tool'], { tty: true });
      expect(tty.code, tty.stderr).to.equal(0);
      expect(tty.stdout).to.equal('You said: use a tool. Done.\n');
      // One status line rewritten in place, cleared before the reply.
      expect(tty.stderr).to.contain('\r\x1b[K… thinking').and.contain('\r\x1b[K… running a tool: bash');

      const piped = await svc(p, ['sessions', 'chat', id, '--prompt', 'use a tool']);
      expect(piped.code, piped.stderr).to.equal(0);
      expect(piped.stderr).to.not.contain('…');
      const forced = await svc(p, ['sessions', 'chat', id, '--prompt', 'use a tool', '--progress']);
      expect(forced.code, forced.stderr).to.equal(0);
      expect(forced.stderr.split('\n').filter((l) => l.startsWith('… '))).to.deep.equal(['… thinking', '… running a tool: bash', '… thinking']);
      expect(forced.stdout).to.equal('You said: use a tool. Done.\n');
      const json = await svc(p, ['sessions', 'chat', id, '--prompt', 'use a tool', '--json'], { tty: true });
      expect(json.code, json.stderr).to.equal(0);
      expect(json.stderr).to.not.contain('…');
      expect(json.stdout.trim().split('\n').every((l) => JSON.parse(l).type)).to.equal(true);
      const quiet = await svc(p, ['sessions', 'chat', id, '--prompt', 'use a tool', '--no-progress'], { tty: true });
      expect(quiet.stderr).to.not.contain('…');

      const t0 = Date.now();
      const failed = await svc(p, ['sessions', 'chat', id, '--prompt', 'explode', '--progress']);
      expect(failed.code).to.equal(1);
      expect(failed.stderr).to.contain('error: the agent failed: the upstream model exploded');
      expect(Date.now() - t0).to.be.below(10_000);
    }));

  it('interactive: Ctrl-C aborts the running reply, a second Ctrl-C exits', () =>
    withSessionProject({ slug: 'chat', env: { SVC_AGENT_RUNTIME: chatRuntime } }, async (p) => {
      const id = (await svc(p, ['sessions', 'new'])).stdout.trim();
      const { f, t } = makeFactory({ configPath: sb.configPath, cwd: sb.dir, env: envOf(p), tty: true });
      const input = new PassThrough();
      f.io.in = input;
      let interrupt: (() => void) | undefined;
      f.onInterrupt = (fn) => {
        interrupt = fn;
        return () => (interrupt = undefined);
      };
      // The reply streams through io.out: interrupt once some of it has arrived.
      let out = '';
      let sawText!: () => void;
      const textArrived = new Promise<void>((r) => (sawText = r));
      f.io.out = {
        write: (s: string) => {
          out += s;
          if (out.includes('w2')) sawText();
          return true;
        },
      };
      const done = main(['sessions', 'chat', id], f);
      input.write('please be slow\n');
      await textArrived;
      interrupt!();
      await new Promise<void>((resolve) => {
        const check = setInterval(() => {
          if (t.stderr().includes('(aborted)')) {
            clearInterval(check);
            resolve();
          }
        }, 20);
      });
      expect(out).to.not.contain('w39'); // stopped midway
      interrupt!(); // at the prompt: exits
      expect(await done).to.equal(0);
      expect(t.stderr()).to.contain('Ctrl-C again to exit');
    }));
});
