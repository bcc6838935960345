import { expect } from 'chai';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createBwrapProvider, probeBwrap } from '../../../infra/sandbox/bwrap.js';
import { setSpawnFault } from '../../../lib/failpoints.js';
import { sandboxSpec } from '../../sandbox/support/sandbox-spec.js';
import { skipUnlessCi } from '../../support/skip.js';
import { isGitCommandError, runGit } from '../../../lib/git-run.js';
import { withProject } from '../../support/server.js';
import { withSessionProject, waitForStatus } from '../../support/sessions.js';
import { CHECKS_ENV, putManifest, settled } from '../checks/support.js';

/**
 * A child process the system refuses (EMFILE when the file table is full, ENOMEM, EAGAIN
 * at the process limit) fails the one operation that wanted it. Each site that starts a
 * child (the git runner, smart HTTP's git, the sandbox providers, the check runner through
 * them) is given refused spawns (lib/failpoints.ts): the server answers that request with
 * an error and keeps answering everything else, and the same operation works once the
 * system has room again. An unheard 'error' from a failed spawn would end the mocha
 * process running the server, failing every spec after it.
 */
describe('spawn failures fail one operation, never the server', function () {
  this.timeout(180_000);
  const basic = (token: string) => `Basic ${Buffer.from(`x-access-token:${token}`).toString('base64')}`;

  it('the git runner: a refused spawn (EMFILE, ENOMEM, EAGAIN) rejects that call with its code; the next call runs', async () => {
    for (const code of ['EMFILE', 'ENOMEM', 'EAGAIN'] as const) {
      const clear = setSpawnFault('git', code);
      const err = await runGit(['--version']).then(
        () => null,
        (e: unknown) => e,
      );
      clear();
      expect(isGitCommandError(err), String(err)).to.equal(true);
      expect((err as { systemCode?: string }).systemCode).to.equal(code);
      expect((await runGit(['--version'])).stdout.toString()).to.match(/^git version/);
    }
  });

  it('refused git spawns behind the API and smart HTTP: 503 for those requests, the server answers, and the same requests succeed after', () =>
    withProject({ slug: 'spawn-git' }, async (p) => {
      await p.repo.commit('topic', { 'work.txt': 'work\n' });
      const compare = '/v1/projects/spawn-git/compare?head=topic';
      const refs = `${p.srv.url}/git/spawn-git.git/info/refs?service=git-upload-pack`;
      const clear = setSpawnFault('git', 'EMFILE');
      const clearHttp = setSpawnFault('git-http', 'EAGAIN');
      try {
        const r = await p.api.get(compare);
        expect(r.status, JSON.stringify(r.body)).to.equal(503);
        const g = await fetch(refs, { headers: { authorization: basic(p.srv.token) } });
        expect(g.status).to.equal(503);
        expect((await g.json()) as object).to.deep.include({ error: 'Unavailable' });
        // Everything that needs no child process answers meanwhile.
        expect((await p.api.get('/v1/projects')).status).to.equal(200);
        expect((await fetch(`${p.srv.url}/readyz`)).status).to.equal(200);
      } finally {
        clear();
        clearHttp();
      }
      const ok = await p.api.get(compare);
      expect(ok.status, JSON.stringify(ok.body)).to.equal(200);
      const g2 = await fetch(refs, { headers: { authorization: basic(p.srv.token) } });
      expect(g2.status).to.equal(200);
      expect(await g2.text()).to.contain('refs/heads/main');
    }));

  it('a sandbox provider whose spawn is refused: that session fails, the server answers, and the next session runs', () =>
    withSessionProject({ slug: 'spawn-sbx' }, async (p) => {
      const clear = setSpawnFault('sandbox', 'EMFILE');
      let failed;
      try {
        const s = (await p.api.post(p.sessions, {})).body.session;
        failed = await waitForStatus(p.api, `${p.sessions}/${s.session_id}`, ['failed', 'running'], 60_000);
        expect((await p.api.get('/v1/projects')).status).to.equal(200);
      } finally {
        clear();
      }
      expect(failed.status).to.equal('failed');
      const s2 = (await p.api.post(p.sessions, {})).body.session;
      expect((await waitForStatus(p.api, `${p.sessions}/${s2.session_id}`, ['failed', 'running'], 60_000)).status).to.equal('running');
    }));

  it('the bwrap provider whose spawn is refused: create fails (create_failed, naming the error) and leaves no directory behind', async function () {
    const probe = probeBwrap();
    if (!probe.ok) return skipUnlessCi(this, `bubblewrap cannot run here: ${probe.reason}`);
    const root = mkdtempSync(path.join(os.tmpdir(), 'svc-spawn-bwrap-'));
    const clear = setSpawnFault('sandbox', 'EMFILE');
    try {
      const provider = createBwrapProvider({ root, caps: { memoryMb: 512, cpus: 1, pids: 256, nofile: 1024, nproc: 4096 } });
      const spec = sandboxSpec({ token: 't', branch: 'b', repoUrl: 'http://127.0.0.1:9/x.git', apiUrl: 'http://127.0.0.1:9/v1', runtime: '/bin/true', label: 'spawn' });
      const err = await provider.create(spec).then(
        () => null,
        (e: Error & { code?: string }) => e,
      );
      expect(err?.name).to.equal('SandboxError');
      expect(err?.code).to.equal('create_failed');
      expect(err?.message).to.contain('EMFILE');
      expect(existsSync(path.join(root, spec.sandboxId))).to.equal(false);
      expect(readdirSync(root)).to.deep.equal([]);
    } finally {
      clear();
      rmSync(root, { recursive: true, force: true });
    }
  });

  it('the check runner whose sandbox spawn is refused: that run settles errored, the server answers, and the next head passes', () =>
    withProject({ slug: 'spawn-chk', env: CHECKS_ENV }, async (p) => {
      await putManifest(p, '[[checks]]\nname = "test"\nrun = "true"\ntimeout_minutes = 2\n');
      const base = p.repo.tip('main')!;
      const clear = setSpawnFault('sandbox', 'EAGAIN');
      let head1: string;
      let cr;
      try {
        head1 = await p.repo.commit('topic', { 'a.txt': 'a\n' });
        cr = (await p.api.post(p.base, { title: 'a', head_ref: 'topic' })).body.change_request;
        const c = await settled(p, cr.number, 'test', { base, head: head1 });
        expect(c.status).to.equal('errored');
        expect((await p.api.get('/v1/projects')).status).to.equal(200);
      } finally {
        clear();
      }
      const head2 = await p.repo.commit('topic', { 'b.txt': 'b\n' });
      expect((await settled(p, cr.number, 'test', { base, head: head2 })).status).to.equal('passed');
    }));
});
