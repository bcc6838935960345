import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { authedUrl, workDir, type WorkDir } from '../../support/git-client.js';
import { client, gatewayUrl } from '../../support/http.js';
import { agentReady, waitForStatus, withSessionProject, type SessionProject } from '../../support/sessions.js';

/**
 * The hidden ref of pause and resume under attack: smart HTTP neither
 * lists, serves nor accepts `refs/svc/*` of a managed project whose session was paused
 * (ls-remote, fetch by name, fetch by sha-want, push to it); a CR cannot name it; the
 * checkpoint route takes only the session's own sandbox key through its own gateway, and
 * refuses a body that is not a checked bundle, and limits how fast one session sends.
 */
const sh = (cwd: string, args: string[]) => execFileSync('git', args, { cwd, encoding: 'utf8', env: { ...process.env, GIT_CONFIG_GLOBAL: '/dev/null', GIT_CONFIG_NOSYSTEM: '1' } }).trim();

async function running(p: SessionProject, slug: string) {
  const created = await p.api.post(`/v1/projects/${slug}/sessions`, {});
  expect(created.status, JSON.stringify(created.body)).to.equal(201);
  const id = created.body.session.session_id as string;
  const one = `/v1/projects/${slug}/sessions/${id}`;
  const s = await waitForStatus(p.api, one, ['running', 'failed'], 60_000);
  expect(s.status, JSON.stringify(s.error)).to.equal('running');
  const state = await agentReady(p.api, `${one}/agent/fake/state`);
  const sandbox = s.sandbox.sandbox_id as string;
  return { id, one, sandbox, key: state.body.env.SVC_TOKEN as string, ws: path.join(p.srv.dataDir, 'sandboxes', sandbox, 'workspace') };
}

describe('sessions: the hidden wip ref and the checkpoint route under attack', function () {
  this.timeout(180_000);
  let w: WorkDir;
  before(async () => (w = await workDir()));
  after(() => w?.cleanup());

  it('smart HTTP never lists, serves or accepts refs/svc/*; a CR cannot name it; only the session’s own key saves or reads', () =>
    withSessionProject({ slug: 'fixture', env: { SVC_SANDBOX_PROVIDER: 'process' } }, async (p) => {
      const made = await p.api.post('/v1/projects', { name: 'Managed', slug: 'managed' });
      expect(made.status).to.equal(201);
      const url = authedUrl(made.body.project.repo_url as string, p.srv.token);
      await w.ok(['init', '-q', '-b', 'main']);
      await w.commit({ 'README.md': 'managed\n' }, 'first');
      await w.ok(['push', '-q', url, 'main']);

      const a = await running(p, 'managed');
      const b = await running(p, 'managed');
      await writeFile(path.join(a.ws, 'secret-draft.txt'), 'work in progress\n');

      // The checkpoint route: no PAT, no other session's key, no key off its gateway, no garbage.
      const wip = (id: string) => `/v1/projects/managed/sessions/${id}/wip`;
      const gwA = client(gatewayUrl(p.srv.dataDir, a.sandbox), a.key);
      const gwB = client(gatewayUrl(p.srv.dataDir, b.sandbox), b.key);
      expect((await p.api.call('PUT', wip(a.id), 'x')).status).to.equal(401);
      expect((await p.api.get(wip(a.id))).status).to.equal(401);
      expect((await client(p.srv.url, a.key).call('PUT', wip(a.id), 'x')).status).to.equal(401);
      expect((await gwB.call('PUT', wip(a.id), 'x')).status).to.equal(401);
      expect((await gwB.get(wip(a.id))).status).to.equal(401);
      expect((await client(gatewayUrl(p.srv.dataDir, a.sandbox), b.key).get(wip(b.id))).status).to.equal(401);
      const garbage = await gwA.call('PUT', wip(a.id), 'not a checkpoint');
      expect(garbage.status).to.equal(400);
      expect(garbage.body.error).to.equal('Bad checkpoint');
      const lying = 'SVCWIP1\n' + JSON.stringify({ wip_sha: 'a'.repeat(40), head_sha: null, skipped: [], runtime_version: null, bundle_bytes: 5, conversation_bytes: 0 }) + '\nhello';
      expect((await gwA.call('PUT', wip(a.id), lying)).status).to.equal(400);
      const evil = 'SVCWIP1\n' + JSON.stringify({ wip_sha: null, head_sha: null, skipped: [], runtime_version: null, bundle_bytes: 0, conversation_bytes: 40 }) + '\n' + JSON.stringify([{ path: '../x', data: '' }]).padEnd(40);
      expect((await gwA.call('PUT', wip(a.id), evil)).status).to.equal(400);

      // A person stops it: the wip ref exists in the state store.
      expect((await p.api.post(`${a.one}/stop`, {})).status).to.equal(200);
      const saved = (await p.api.get(a.one)).body.session.saved;
      expect(saved.wip_sha).to.match(/^[0-9a-f]{40}$/);
      const wipRef = `refs/svc/sessions/${a.id}/wip`;

      // Smart HTTP: not listed, not fetchable by name or by sha, not pushable.
      const ls = await w.run(['ls-remote', url]);
      expect(ls.code, ls.stderr).to.equal(0);
      expect(ls.stdout).to.not.include('refs/svc');
      expect(ls.stdout).to.not.include(saved.wip_sha);
      const byName = await w.run(['fetch', url, wipRef]);
      expect(byName.code).to.not.equal(0);
      const bySha = await w.run(['-c', 'protocol.version=2', 'fetch', url, saved.wip_sha]);
      expect(bySha.code).to.not.equal(0);
      const bySha0 = await w.run(['-c', 'protocol.version=0', 'fetch', url, saved.wip_sha]);
      expect(bySha0.code).to.not.equal(0);
      expect((await w.run(['cat-file', '-e', saved.wip_sha])).code).to.not.equal(0);
      const push = await w.run(['push', url, `main:${wipRef}`]);
      expect(push.code).to.not.equal(0);
      expect(push.stderr).to.include('refs/svc/');
      const pushOther = await w.run(['push', url, 'main:refs/svc/anything']);
      expect(pushOther.code).to.not.equal(0);
      expect((await w.ok(['ls-remote', url])).includes('refs/svc')).to.equal(false);
      const project = made.body.project.project_id as string;
      const store = path.join(p.srv.dataDir, 'repos', 'session-state', `${project}.git`);
      expect(sh(store, ['rev-parse', wipRef])).to.equal(saved.wip_sha);
      expect(sh(path.join(p.srv.dataDir, 'repos', `${project}.git`), ['for-each-ref', 'refs/svc/'])).to.equal('');

      // A CR whose head names it: 400.
      const cr = await p.api.post('/v1/projects/managed/change-requests', { title: 'steal', head_ref: wipRef, base_ref: 'main' });
      expect(cr.status, JSON.stringify(cr.body)).to.equal(400);
      expect(cr.body.message).to.include('not a ref');

      // A sandbox that floods its checkpoint route: a burst, then 429 with Retry-After before the body is read.
      const statuses: number[] = [];
      let limited: Awaited<ReturnType<typeof gwB.call>> | undefined;
      for (let i = 0; i < 20 && !limited; i++) {
        const r = await gwB.call('PUT', wip(b.id), 'not a checkpoint');
        if (r.status === 429) limited = r;
        else statuses.push(r.status);
      }
      expect(statuses.length).to.be.within(1, 6);
      expect(new Set(statuses)).to.deep.equal(new Set([400]));
      expect(limited?.status).to.equal(429);
      expect(Number(limited!.headers.get('retry-after'))).to.be.greaterThan(0);
      await p.api.post(`${b.one}/stop`, {});
    }));
});
