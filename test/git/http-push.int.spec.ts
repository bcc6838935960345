import { expect } from 'chai';
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import path from 'node:path';
import { writeFile } from 'node:fs/promises';
import type { GitEngine, ProjectRepo } from '../../infra/git/port.js';
import { openProjectRepo } from '../../infra/git/open-repo.js';
import { MirrorRegistry } from '../../infra/git/mirror.js';
import { nodePushApplies, parseAdvertisement, parseReport } from '../../infra/git/http-push.js';
import { enginesUnderTest, forEachEngine } from './support/engines.js';
import { git, parentsOf, RepoFixture, showFile } from './support/repo-fixture.js';
import { startHttpGitServer, type HttpGitServer } from './support/http-git-server.js';
import { domainError } from '../support/domain-error.js';

const engines = await enginesUnderTest();
const USER = 'svc-bot';
const PASSWORD = 'pw-node-push';
const ADVERTISE = 'GET /origin.git/info/refs?service=git-receive-pack';
const RECEIVE = 'POST /origin.git/git-receive-pack';

/** main and a feature branch that both change `f.txt` (different lines: a content merge, a new blob), pushed to origin. */
async function contentFixture(): Promise<RepoFixture> {
  const fx = await RepoFixture.create();
  const lines = Array.from({ length: 12 }, (_, i) => `line ${i}`);
  await fx.commit('base', { 'f.txt': lines.join('\n') + '\n' });
  await fx.switch('feature', true);
  await fx.commit('feature', { 'f.txt': [...lines.slice(0, 11), 'line 11 feature'].join('\n') + '\n' });
  await fx.switch('main');
  await fx.commit('main', { 'f.txt': ['line 0 main', ...lines.slice(1)].join('\n') + '\n' });
  await fx.push('main', 'feature');
  return fx;
}

/**
 * A front to `target` that can cut the next receive-pack POST: `before` closes the
 * connection without forwarding it (nothing happens on the server), `after` forwards it
 * and closes the connection instead of answering (the update happened, the answer is lost).
 */
async function startCuttingFront(target: string): Promise<{ url: string; cutNext(mode: 'before' | 'after'): void; close(): Promise<void> }> {
  let cut: 'before' | 'after' | null = null;
  const server = http.createServer((req, res) => {
    const mode = req.method === 'POST' && req.url?.endsWith('/git-receive-pack') ? cut : null;
    if (mode) cut = null;
    if (mode === 'before') return void req.socket.destroy();
    const up = http.request(`${target}${req.url}`, { method: req.method, headers: req.headers }, (answer) => {
      if (mode === 'after') {
        answer.resume();
        answer.on('end', () => req.socket.destroy());
        return;
      }
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    req.pipe(up);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    cutNext: (mode) => void (cut = mode),
    close: () => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))),
  };
}

describe('Node smart-HTTP push: its rules and parsers', () => {
  it('applies to http(s) only, and not when a git http variable is where git would see it', () => {
    expect(nodePushApplies('https://h/x.git', {})).to.equal(true);
    expect(nodePushApplies('file:///x.git', {})).to.equal(false);
    expect(nodePushApplies('ssh://h/x.git', {})).to.equal(false);
    for (const k of ['GIT_SSL_NO_VERIFY', 'GIT_CURL_VERBOSE', 'GIT_HTTP_USER_AGENT']) {
      expect(nodePushApplies('https://h/x.git', { [k]: '1' }), `${k} where git would see it`).to.equal(false);
    }
    // The runner's environment (the default) carries none of them, nor any proxy variable.
    expect(nodePushApplies('https://h/x.git')).to.equal(true);
  });

  const pkt = (s: string) => (s.length + 4).toString(16).padStart(4, '0') + s;
  it('reads an advertisement, an empty repository (capabilities^{}) and refuses a cut one', () => {
    const a = 'a'.repeat(40);
    const full = parseAdvertisement(Buffer.from(pkt('# service=git-receive-pack\n') + '0000' + pkt(`${a} refs/heads/main\0report-status atomic\n`) + pkt(`${a} refs/heads/x\n`) + '0000'));
    expect([...full.refs]).to.deep.equal([['refs/heads/main', a], ['refs/heads/x', a]]);
    expect([...full.caps]).to.deep.equal(['report-status', 'atomic']);
    const empty = parseAdvertisement(Buffer.from(pkt('# service=git-receive-pack\n') + '0000' + pkt(`${'0'.repeat(40)} capabilities^{}\0report-status\n`) + '0000'));
    expect(empty.refs.size).to.equal(0);
    expect([...empty.caps]).to.deep.equal(['report-status']);
    expect(() => parseAdvertisement(Buffer.from(pkt('# service=git-receive-pack\n') + '0000' + pkt(`${a} refs/heads/main\0report-status\n`)))).to.throw('cut off');
  });

  it('reads a report: ok, ng with its reason; anything else is no report', () => {
    const r = parseReport(Buffer.from(pkt('unpack ok\n') + pkt('ok refs/heads/a\n') + pkt('ng refs/heads/b pre-receive hook declined\n') + '0000'));
    expect(r?.unpack).to.equal('ok');
    expect(r?.refs.get('refs/heads/a')).to.deep.equal({ ok: true, reason: '' });
    expect(r?.refs.get('refs/heads/b')).to.deep.equal({ ok: false, reason: 'pre-receive hook declined' });
    expect(parseReport(Buffer.from(pkt('unpack ok\n') + pkt('ok refs/heads/a\n')))).to.equal(null, 'no flush: cut off');
    expect(parseReport(Buffer.from('<html>'))).to.equal(null);
  });
});

forEachEngine(engines, 'Node smart-HTTP push of a merge', (engine: GitEngine) => {
  let fx: RepoFixture;
  let server: HttpGitServer;
  let mirrorsDir: string;
  let repo: ProjectRepo;

  const open = (url: string, password = PASSWORD, projectId = 'p', nodePush = true) =>
    openProjectRepo({ location: { projectId, url: `${url}/origin.git`, credentials: { username: USER, password } }, mirrorsDir, engine, mirrors: new MirrorRegistry(), nodePush });
  /** Receive-pack requests since `from`, and whether any was answered 401 first (git's round: a GET without credentials). */
  const pushTraffic = (from: number) => server.requests.slice(from).filter((r) => r.includes('receive-pack'));
  beforeEach(async () => {
    fx = await contentFixture();
    server = await startHttpGitServer(fx.root, USER, PASSWORD);
    mirrorsDir = await fx.dir('mirrors');
    repo = open(server.url);
    await repo.preview('main', 'feature'); // the mirror holds both tips: the fast path
  });
  afterEach(async () => {
    await server?.close();
    await fx?.cleanup();
  });

  it('publishes a content merge with one GET and one POST, credentials sent at once; the remote is consistent', async () => {
    const base = await fx.originSha('main');
    const head = await fx.originSha('feature');
    const from = server.requests.length;
    const auth = server.authAttempts;
    const r = await repo.merge({ base_ref: 'main', head_ref: 'feature', message: 'content merge' });
    expect(server.requests.slice(from)).to.deep.equal([ADVERTISE, RECEIVE], 'no fetch, no 401 round, no git push');
    expect(server.authAttempts - auth).to.equal(2);
    expect(await fx.originSha('main')).to.equal(r.merge_commit_sha);
    expect(await parentsOf(fx.origin, r.merge_commit_sha)).to.deep.equal([base, head]);
    const merged = await showFile(fx.origin, r.merge_commit_sha, 'f.txt');
    expect(merged.split('\n')[0]).to.equal('line 0 main');
    expect(merged.split('\n')[11]).to.equal('line 11 feature');
    await git(fx.origin, ['fsck', '--strict', '--no-dangling']);
  });

  it('the long way (a branch never read) also pushes with one GET and one POST after its fetch', async () => {
    await fx.switch('feature');
    await fx.switch('fresh', true);
    await fx.commit('fresh', { 'g.txt': 'g\n' });
    await fx.push('fresh');
    const base = await fx.originSha('main');
    const from = server.requests.length;
    const r = await repo.merge({ base_ref: 'main', head_ref: 'fresh', message: 'long way' });
    expect(server.requests.slice(from).some((q) => q.startsWith('POST') && q.includes('git-upload-pack'))).to.equal(true, 'fetched');
    expect(pushTraffic(from)).to.deep.equal([ADVERTISE, RECEIVE]);
    expect(await parentsOf(fx.origin, r.merge_commit_sha)).to.deep.equal([base, await fx.originSha('fresh')]);
    await git(fx.origin, ['fsck', '--strict', '--no-dangling']);
  });

  for (const branch of ['main', 'feature'] as const) {
    it(`a stale ${branch === 'main' ? 'base' : 'head'}: the advertisement refuses the lease, nothing is sent, the long way merges the live tips`, async () => {
      await fx.switch(branch);
      const moved = await fx.commit(`elsewhere on ${branch}`, { 'moved.txt': 'x\n' });
      await fx.push(branch);
      const from = server.requests.length;
      const r = await repo.merge({ base_ref: 'main', head_ref: 'feature', message: 'm' });
      const reqs = server.requests.slice(from);
      expect(reqs[0]).to.equal(ADVERTISE);
      expect(reqs[1]).to.not.equal(RECEIVE, 'nothing sent on the stale lease');
      expect(pushTraffic(from)).to.deep.equal([ADVERTISE, ADVERTISE, RECEIVE], 'then the long way: one Node push');
      expect(branch === 'main' ? r.base_sha : r.head_sha).to.equal(moved);
      expect(await fx.originSha('main')).to.equal(r.merge_commit_sha);
    });
  }

  it('a pre-receive hook refuses: `Push rejected` with its reason, as with git push', async () => {
    const base = await fx.originSha('main');
    await writeFile(path.join(fx.origin, 'hooks', 'pre-receive'), '#!/bin/sh\necho "main is frozen" >&2\nexit 1\n', { mode: 0o755 });
    const from = server.requests.length;
    const node = await domainError(repo.merge({ base_ref: 'main', head_ref: 'feature', message: 'm' }));
    expect(server.requests.slice(from)).to.deep.equal([ADVERTISE, RECEIVE]);
    const viaGit = await domainError(open(server.url, PASSWORD, 'p', false).merge({ base_ref: 'main', head_ref: 'feature', message: 'm' }));
    for (const err of [node, viaGit]) {
      expect(err).to.include({ code: 'unavailable', reason: 'Push rejected', message: 'The repository refused to update main: pre-receive hook declined.' });
      expect(err.details).to.deep.equal({ reason: 'pre-receive hook declined' });
    }
    expect(await fx.originSha('main')).to.equal(base);
  });

  it('a wrong password: the same error as git push gives, nothing moved', async () => {
    const base = await fx.originSha('main');
    const wrong = open(server.url, 'wrong', 'p'); // the same mirror: its tips are there, the fast path runs
    const from = server.requests.length;
    const node = await domainError(wrong.merge({ base_ref: 'main', head_ref: 'feature', message: 'm' }));
    expect(server.requests.slice(from)).to.deep.equal([ADVERTISE], 'refused at the GET, nothing else sent');
    const viaGit = await domainError(open(server.url, 'wrong', 'p', false).merge({ base_ref: 'main', head_ref: 'feature', message: 'm' }));
    expect({ code: node.code, reason: node.reason, message: node.message, details: node.details }).to.deep.equal({
      code: viaGit.code,
      reason: viaGit.reason,
      message: viaGit.message,
      details: viaGit.details,
    });
    expect(node.code).to.equal('unavailable');
    expect(await fx.originSha('main')).to.equal(base);
  });

  it('the Node push turned off: git push is used (its 401 round shows)', async () => {
    const from = server.requests.length;
    const r = await open(server.url, PASSWORD, 'p', false).merge({ base_ref: 'main', head_ref: 'feature', message: 'm' });
    expect(pushTraffic(from)).to.deep.equal([ADVERTISE, ADVERTISE, RECEIVE], 'git: a GET answered 401, then with credentials');
    expect(await fx.originSha('main')).to.equal(r.merge_commit_sha);
  });

  it('no outbound proxy: proxy variables of the server and an http.proxy in the mirror are ignored; fetch, Node push and git push go to the repository', async () => {
    let proxied = 0;
    const proxy = net.createServer((s) => {
      proxied++;
      s.destroy();
    });
    await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
    const proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
    const keys = ['http_proxy', 'https_proxy', 'HTTP_PROXY', 'HTTPS_PROXY', 'ALL_PROXY', 'all_proxy'];
    for (const k of keys) process.env[k] = proxyUrl;
    await git(path.join(mirrorsDir, 'p.git'), ['config', 'http.proxy', proxyUrl]);
    try {
      const from = server.requests.length;
      const node = await repo.merge({ base_ref: 'main', head_ref: 'feature', message: 'node push' });
      expect(server.requests.slice(from)).to.deep.equal([ADVERTISE, RECEIVE], 'the Node push still applies');
      await fx.switch('feature');
      await fx.commit('after', { 'after.txt': 'a\n' });
      await fx.push('feature');
      await fx.switch('main');
      const viaGit = await open(server.url, PASSWORD, 'p', false).merge({ base_ref: 'main', head_ref: 'feature', message: 'git push' });
      expect(await fx.originSha('main')).to.equal(viaGit.merge_commit_sha);
      expect(await parentsOf(fx.origin, viaGit.merge_commit_sha)).to.deep.equal([node.merge_commit_sha, await fx.originSha('feature')]);
      expect(proxied, 'connections to the proxy').to.equal(0);
    } finally {
      for (const k of keys) delete process.env[k];
      await new Promise<void>((r) => proxy.close(() => r()));
    }
  });

  it('connects only to the addresses the URL policy checked: a host name that does not resolve, pinned to 127.0.0.1', async () => {
    const port = new URL(server.url).port;
    const policy = { allowLocalNetworks: true, allowFile: false, allowHttpCredentials: true, allowedHosts: [], blockedHosts: [], dataDir: mirrorsDir, resolve: async () => ['127.0.0.1'] };
    const pinned = openProjectRepo({
      location: { projectId: 'p', url: `http://svc-pinned.invalid:${port}/origin.git`, credentials: { username: USER, password: PASSWORD } },
      mirrorsDir,
      engine,
      mirrors: new MirrorRegistry(),
      policy,
    });
    const from = server.requests.length;
    const r = await pinned.merge({ base_ref: 'main', head_ref: 'feature', message: 'pinned' });
    expect(server.requests.slice(from)).to.deep.equal([ADVERTISE, RECEIVE]);
    expect(await fx.originSha('main')).to.equal(r.merge_commit_sha);
  });

  for (const mode of ['before', 'after'] as const) {
    it(`the connection closes during the POST (${mode} the server got it): the merge reported is the one the remote holds`, async () => {
      const front = await startCuttingFront(server.url);
      try {
        const cut = open(front.url, PASSWORD, 'p');
        const base = await fx.originSha('main');
        const head = await fx.originSha('feature');
        front.cutNext(mode);
        const from = server.requests.length;
        const r = await cut.merge({ base_ref: 'main', head_ref: 'feature', message: 'm' });
        const reqs = server.requests.slice(from);
        expect(reqs.filter((q) => q === RECEIVE)).to.have.length(1, mode === 'before' ? 'the cut POST never arrived; the long way pushed' : 'the cut POST landed; nothing pushed again');
        // After no answer the live base decides (one ls-remote: protocol v2's ls-refs POST); a fetch follows only when it did not move.
        const uploadPosts = reqs.filter((q) => q === 'POST /origin.git/git-upload-pack').length;
        if (mode === 'after') expect(uploadPosts).to.equal(1, 'the ls-remote only');
        else expect(uploadPosts).to.be.greaterThan(1, 'the ls-remote, then the long way fetched');
        expect(await fx.originSha('main')).to.equal(r.merge_commit_sha);
        expect(await parentsOf(fx.origin, r.merge_commit_sha)).to.deep.equal([base, head]);
        await git(fx.origin, ['fsck', '--strict', '--no-dangling']);
      } finally {
        await front.close();
      }
    });
  }
});
