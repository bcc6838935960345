import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { rebuildProjections } from '../../../projections/rebuild.js';
import { client, gatewayUrl } from '../../support/http.js';
import { agentReady, waitForStatus, withSessionProject, type SessionProject } from '../../support/sessions.js';
import { until } from '../../support/wait.js';

/**
 * Pause and resume on the process provider with the scripted runtime:
 * what a stop saves (files within the cap, the runtime's conversation files, never its
 * auth file), what a restart restores inside the new sandbox, `--fresh`, removal, and the
 * hidden ref kept away from smart HTTP and the remote. The real runtime and the other
 * stop paths are in pause-resume.e2e.spec.ts.
 */
const sh = (cwd: string, args: string[]) => execFileSync('git', args, { cwd, encoding: 'utf8', env: { ...process.env, GIT_CONFIG_GLOBAL: '/dev/null', GIT_CONFIG_NOSYSTEM: '1' } }).trim();

async function sandboxDirs(p: SessionProject, id: string) {
  const row = (await p.srv.db.db.one<{ sandbox_id: string }>({
    text: "SELECT sandbox_id FROM session_sandboxes WHERE session_id = $1 AND state = 'active' ORDER BY created_at DESC LIMIT 1",
    values: [id],
  }))!;
  const root = path.join(p.srv.dataDir, 'sandboxes', row.sandbox_id);
  return { sandbox: row.sandbox_id, ws: path.join(root, 'workspace'), data: path.join(root, 'home', '.local', 'share', 'opencode') };
}

async function startRunning(p: SessionProject, body: Record<string, unknown> = {}) {
  const created = await p.api.post(p.sessions, body);
  expect(created.status, JSON.stringify(created.body)).to.equal(201);
  const id = created.body.session.session_id as string;
  const one = `${p.sessions}/${id}`;
  const s = await waitForStatus(p.api, one, ['running', 'failed'], 60_000);
  expect(s.status, JSON.stringify(s.error)).to.equal('running');
  await agentReady(p.api, `${one}/agent/fake/state`);
  return { id, one };
}

const events = async (p: SessionProject, one: string) => ((await p.api.get(`${one}/events`)).body.events as { type: string; data: any }[]);

describe('sessions: pause and resume (process provider, scripted runtime)', function () {
  this.timeout(180_000);

  it('stop saves tracked changes, untracked files and the conversation (not auth, not over the cap); restart restores them; --fresh does not; remove drops them', () =>
    withSessionProject({ slug: 'pause', env: { SVC_SANDBOX_PROVIDER: 'process', SVC_SESSION_WIP_MAX_BYTES: '20000' } }, async (p) => {
      const { id, one } = await startRunning(p);
      const first = await sandboxDirs(p, id);
      await writeFile(path.join(first.ws, 'README.md'), 'fixture\nchanged, not committed\n');
      await mkdir(path.join(first.ws, 'notes'), { recursive: true });
      await writeFile(path.join(first.ws, 'notes', 'new.txt'), 'untracked\n');
      await writeFile(path.join(first.ws, '.gitignore'), 'ignored.log\n');
      await writeFile(path.join(first.ws, 'ignored.log'), 'never saved\n');
      await writeFile(path.join(first.ws, 'big.bin'), Buffer.alloc(30_000, 7));
      await mkdir(first.data, { recursive: true });
      await writeFile(path.join(first.data, 'opencode.db'), 'CONVERSATION-1');
      await writeFile(path.join(first.data, 'auth.json'), '{"key":"never-saved"}');
      const branchTip = p.repo.tip(id);

      const stopped = await p.api.post(`${one}/stop`, {});
      expect(stopped.status, JSON.stringify(stopped.body)).to.equal(200);
      const info = (await p.api.get(one)).body.session;
      expect(info.saved, JSON.stringify(info)).to.not.equal(null);
      expect(info.saved.wip_sha).to.match(/^[0-9a-f]{40}$/);
      expect(info.saved.conversation).to.equal(true);
      expect(info.saved.skipped).to.deep.equal([{ path: 'big.bin', bytes: 30_000, reason: 'over SVC_SESSION_WIP_MAX_BYTES' }]);
      const paused = (await events(p, one)).filter((e) => e.type === 'SessionPaused');
      expect(paused).to.have.length(1);
      expect(paused[0]!.data).to.include({ wip_sha: info.saved.wip_sha, conversation: true });
      expect(paused[0]!.data.skipped.map((s: { path: string }) => s.path)).to.deep.equal(['big.bin']);

      // The ref lives in the server's state store, and nowhere else.
      const project = (await p.api.get('/v1/projects/pause')).body.project;
      const store = path.join(p.srv.dataDir, 'repos', 'session-state', `${project.project_id}.git`);
      expect(sh(store, ['rev-parse', `refs/svc/sessions/${id}/wip`])).to.equal(info.saved.wip_sha);
      expect(sh(store, ['ls-tree', '-r', '--name-only', info.saved.wip_sha]).split('\n').sort()).to.deep.equal(['.gitignore', 'README.md', 'notes/new.txt']);
      expect(sh(p.repo.bare, ['for-each-ref', 'refs/svc/'])).to.equal('');
      expect(p.repo.tip(id)).to.equal(branchTip);
      // The conversation is sealed in the database, not in plain.
      const row = (await p.srv.db.db.one<{ conversation: string }>({ text: 'SELECT conversation FROM session_saved_state WHERE session_id = $1', values: [id] }))!;
      expect(row.conversation).to.match(/^v2\./);
      expect(row.conversation).to.not.include(Buffer.from('CONVERSATION-1').toString('base64'));

      // Restart: the new sandbox has them back, unstaged, on the untouched branch.
      expect((await p.api.post(`${one}/restart`, {})).status).to.equal(200);
      expect((await waitForStatus(p.api, one, ['running', 'failed'], 60_000)).status).to.equal('running');
      const second = await sandboxDirs(p, id);
      expect(second.sandbox).to.not.equal(first.sandbox);
      expect(await readFile(path.join(second.ws, 'notes', 'new.txt'), 'utf8')).to.equal('untracked\n');
      expect(await readFile(path.join(second.ws, 'README.md'), 'utf8')).to.equal('fixture\nchanged, not committed\n');
      expect(existsSync(path.join(second.ws, 'big.bin'))).to.equal(false);
      expect(existsSync(path.join(second.ws, 'ignored.log'))).to.equal(false);
      expect(sh(second.ws, ['status', '--porcelain']).split('\n').map((l) => l.trim()).sort()).to.deep.equal(['?? .gitignore', '?? notes/', 'M README.md']);
      expect(sh(second.ws, ['rev-parse', 'HEAD'])).to.equal(branchTip);
      expect(await readFile(path.join(second.data, 'opencode.db'), 'utf8')).to.equal('CONVERSATION-1');
      expect(existsSync(path.join(second.data, 'auth.json'))).to.equal(false);
      expect(sh(second.ws, ['for-each-ref', 'refs/svc/'])).to.equal('');
      await until(async () => (await events(p, one)).some((e) => e.type === 'SessionResumed'), 'SessionResumed');
      const resumed = (await events(p, one)).find((e) => e.type === 'SessionResumed')!;
      expect(resumed.data).to.include({ wip_sha: info.saved.wip_sha, conversation: 'restored', sandbox_id: second.sandbox });
      // The same sandbox reading it again (its daemon's quick probe gave up after the server had
      // answered, and it asks once more after its clone): the frame again, no second SessionResumed.
      const key = (await agentReady(p.api, `${one}/agent/fake/state`)).body.env.SVC_TOKEN as string;
      const reread = await client(gatewayUrl(p.srv.dataDir, second.sandbox), key).get(`${one}/wip`);
      expect(reread.status).to.equal(200);
      expect((await events(p, one)).filter((e) => e.type === 'SessionResumed').length).to.equal(1);
      expect(p.repo.tip(id)).to.equal(branchTip);

      // --fresh: the spec's plain restart; what was saved is gone.
      expect((await p.api.post(`${one}/restart`, { fresh: true })).status).to.equal(200);
      expect((await waitForStatus(p.api, one, ['running', 'failed'], 60_000)).status).to.equal('running');
      const third = await sandboxDirs(p, id);
      expect(existsSync(path.join(third.ws, 'notes', 'new.txt'))).to.equal(false);
      expect(await readFile(path.join(third.ws, 'README.md'), 'utf8')).to.equal('fixture\n');
      expect(existsSync(path.join(third.data, 'opencode.db'))).to.equal(false);
      expect((await p.api.get(one)).body.session.saved).to.equal(null);
      expect(sh(store, ['for-each-ref', 'refs/svc/'])).to.equal('');
      expect((await p.api.post(`${one}/restart`, { fresh: 'yes' })).status).to.equal(400);

      // Saved again, then removed: ref and state go.
      await writeFile(path.join(third.ws, 'again.txt'), 'again\n');
      await p.api.post(`${one}/stop`, {});
      const again = (await p.api.get(one)).body.session.saved;
      expect(sh(store, ['rev-parse', `refs/svc/sessions/${id}/wip`])).to.equal(again.wip_sha);
      expect((await rebuildProjections(p.srv.db.db, { verify: true })).differences).to.deep.equal([]);
      expect((await p.api.call('DELETE', one)).status).to.equal(204);
      expect(sh(store, ['for-each-ref', 'refs/svc/'])).to.equal('');
      expect(await p.srv.db.db.one({ text: 'SELECT 1 FROM session_saved_state WHERE session_id = $1', values: [id] })).to.equal(undefined);
    }));

  it('a saved runtime version that no longer matches resumes with the workspace but without the conversation, and says so', () =>
    withSessionProject({ slug: 'pause-version', env: { SVC_SANDBOX_PROVIDER: 'process' } }, async (p) => {
      const { id, one } = await startRunning(p);
      const first = await sandboxDirs(p, id);
      await writeFile(path.join(first.ws, 'draft.txt'), 'draft\n');
      await mkdir(first.data, { recursive: true });
      await writeFile(path.join(first.data, 'opencode.db'), 'CONVERSATION-OLD');
      expect((await p.api.post(`${one}/stop`, {})).status).to.equal(200);
      expect((await p.api.get(one)).body.session.saved.conversation).to.equal(true);
      // The runtime was upgraded since (the scripted runtime has no version: the saved one differs).
      await p.srv.db.db.run({ text: "UPDATE session_saved_state SET runtime_version = '0.0.1-old' WHERE session_id = $1", values: [id] });
      expect((await p.api.post(`${one}/restart`, {})).status).to.equal(200);
      expect((await waitForStatus(p.api, one, ['running', 'failed'], 60_000)).status).to.equal('running');
      const second = await sandboxDirs(p, id);
      expect(await readFile(path.join(second.ws, 'draft.txt'), 'utf8')).to.equal('draft\n');
      expect(existsSync(path.join(second.data, 'opencode.db'))).to.equal(false);
      await until(async () => (await events(p, one)).some((e) => e.type === 'SessionResumed'), 'SessionResumed');
      expect((await events(p, one)).find((e) => e.type === 'SessionResumed')!.data.conversation).to.equal('version_mismatch');
      const log = await readFile(path.join(p.srv.dataDir, 'sandboxes', second.sandbox, 'sandbox.log'), 'utf8');
      expect(log).to.include('resumes without it');
      await p.api.post(`${one}/stop`, {});
    }));
});
