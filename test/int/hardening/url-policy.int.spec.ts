import { expect } from 'chai';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { checkRepoUrl, isLocalAddress, looseIPv4, type RepoUrlPolicy } from '../../../infra/git/url-policy.js';
import { openProjectRepo } from '../../../infra/git/open-repo.js';
import { MirrorRegistry } from '../../../infra/git/mirror.js';
import { createEngine } from '../../../infra/git/engine.js';
import { serverAndRepo } from '../../support/suite.js';
import { client } from '../../support/http.js';
import { blackHole } from '../../support/blackhole.js';
import { domainError } from '../../support/domain-error.js';

const base: RepoUrlPolicy = {
  allowLocalNetworks: false,
  allowFile: false,
  allowHttpCredentials: false,
  allowedHosts: [],
  blockedHosts: [],
  dataDir: '/nonexistent-data',
};

describe('outbound repository URLs', function () {
  this.timeout(60_000);

  describe('the SSRF table, with a stubbed resolver: refused before any connection', () => {
    // Names resolve only through this stub: nothing here reaches a socket.
    const asked: string[] = [];
    const resolve = async (host: string) => {
      asked.push(host);
      const table: Record<string, string[]> = {
        'rebind.example': ['127.0.0.1'],
        'metadata.example': ['169.254.169.254'],
        'mixed.example': ['93.184.216.34', '10.0.0.7'],
        'six.example': ['fd00::1'],
        'public.example': ['93.184.216.34'],
      };
      const a = table[host];
      if (!a) throw new Error('ENOTFOUND');
      return a;
    };
    const policy = { ...base, resolve };
    const local = [
      'http://127.0.0.1:1/x',
      'http://127.1/x.git',
      'http://2130706433/x.git', // decimal
      'http://0x7f000001/x.git', // hex
      'git://2130706433/x.git', // decimal in a non-special scheme (git would resolve it with inet_aton)
      'ssh://0x7f.1/x.git',
      'ssh://git@0177.0.0.1/x.git', // octal
      'https://10.1.2.3/x.git',
      'https://172.16.0.1/x.git',
      'https://192.168.1.1/x.git',
      'http://169.254.169.254/latest/meta-data',
      'http://100.64.0.1/x.git',
      'http://0.0.0.0/x.git',
      'http://224.0.0.1/x.git',
      'http://[::1]/x.git',
      'http://[::]/x.git',
      'http://[::ffff:127.0.0.1]/x.git',
      'http://[::ffff:a9fe:a9fe]/x.git',
      'http://[64:ff9b::7f00:1]/x.git',
      'http://[2002:7f00:1::]/x.git',
      'http://[fe80::1]/x.git',
      'http://[fd12:3456::1]/x.git',
      'http://[ff02::1]/x.git',
      'https://rebind.example/x.git',
      'https://metadata.example/x.git',
      'https://mixed.example/x.git',
      'https://six.example/x.git',
      'git@rebind.example:o/r.git',
    ];
    for (const url of local) {
      it(`refuses ${url}`, async () => {
        const err = await domainError(checkRepoUrl(url, policy));
        expect(err.code).to.equal('validation');
        expect(err.details.rule).to.equal('local network');
        expect(err.message).to.match(/SVC_REPO_ALLOW_LOCAL_NETWORKS/);
        // ... and each of them passes with the flag (the rule is what refused them).
        await checkRepoUrl(url, { ...policy, allowLocalNetworks: true });
      });
    }

    it('the stub, not the network, answered every name', () => {
      expect(asked).to.include.members(['rebind.example', 'metadata.example', 'mixed.example', 'six.example']);
    });

    it('public hosts pass; allow and deny lists of host patterns apply', async () => {
      expect((await checkRepoUrl('https://public.example/o/r.git', policy)).addresses).to.deep.equal(['93.184.216.34']);
      expect((await domainError(checkRepoUrl('https://public.example/x.git', { ...policy, blockedHosts: ['*.example'] }))).details.rule).to.equal('blocked host');
      expect((await domainError(checkRepoUrl('https://public.example/x.git', { ...policy, allowedHosts: ['git.corp'] }))).details.rule).to.equal('host not allowed');
      // An allow-listed host skips the local-network rule (Gitea's ALLOWED_DOMAINS).
      await checkRepoUrl('https://rebind.example/x.git', { ...policy, allowedHosts: ['rebind.example'] });
      expect((await domainError(checkRepoUrl('https://nowhere.example/x.git', policy))).details.rule).to.equal('host does not resolve');
    });

    it('no option-like host or path segment, no query string or fragment', async () => {
      for (const url of [
        'ssh://-oProxyCommand=touch%20/tmp/pwned/x',
        'http://public.example/internal/admin?x=1',
        'https://public.example/x.git#frag',
        'https://public.example/-x/y.git',
        'https://public.example/a/%2Dupload-pack/y.git',
        'git@-oProxyCommand=x:y.git',
      ]) {
        expect((await domainError(checkRepoUrl(url, { ...policy, allowLocalNetworks: true }))).code, url).to.equal('validation');
      }
    });

    it('credentials are refused on plain http unless allowed', async () => {
      expect((await domainError(checkRepoUrl('http://public.example/x.git', policy, { hasCredentials: true }))).details.rule).to.equal('credentials need https');
      await checkRepoUrl('http://public.example/x.git', { ...policy, allowHttpCredentials: true }, { hasCredentials: true });
    });

    it('address helpers', () => {
      expect(looseIPv4('2130706433')).to.equal('127.0.0.1');
      expect(looseIPv4('0x7f.0.0.1')).to.equal('127.0.0.1');
      expect(looseIPv4('10.1')).to.equal('10.0.0.1');
      expect(looseIPv4('example')).to.equal(null);
      expect(isLocalAddress('8.8.8.8')).to.equal(false);
      expect(isLocalAddress('2606:4700::1111')).to.equal(false);
    });
  });

  describe('at connect time', () => {
    let mirrorsDir: string;
    before(async () => (mirrorsDir = await mkdtemp(path.join(os.tmpdir(), 'svc-policy-'))));
    after(() => rm(mirrorsDir, { recursive: true, force: true }));

    it('a repository whose host now resolves to loopback is refused before git connects (DNS rebinding)', async () => {
      const hole = await blackHole();
      try {
        let answer = ['93.184.216.34'];
        const repo = openProjectRepo({
          location: { projectId: 'rebind', url: `http://rebind.example:${hole.port}/x.git` },
          mirrorsDir,
          engine: await createEngine('git'),
          mirrors: new MirrorRegistry(),
          policy: { ...base, resolve: async () => answer },
        });
        answer = ['127.0.0.1'];
        const err = await domainError(repo.readTips(['main']));
        expect(err.details.rule).to.equal('local network');
        const literal = openProjectRepo({
          location: { projectId: 'literal', url: `http://127.0.0.1:${hole.port}/x.git` },
          mirrorsDir,
          engine: await createEngine('git'),
          mirrors: new MirrorRegistry(),
          policy: base,
        });
        expect((await domainError(literal.readTips(['main']))).details.rule).to.equal('local network');
        expect(hole.connections(), 'no connection was attempted').to.equal(0);
      } finally {
        await hole.close();
      }
    });

    it('a redirect from one loopback port to another never carries the credential', async () => {
      const seenAtB: (string | undefined)[] = [];
      const b = http.createServer((req, res) => {
        seenAtB.push(req.headers.authorization);
        res.writeHead(401, { 'WWW-Authenticate': 'Basic realm="b"' }).end();
      });
      await new Promise<void>((r) => b.listen(0, '127.0.0.1', () => r()));
      const bPort = (b.address() as AddressInfo).port;
      let hitsAtA = 0;
      // host-a sends every request on to host-b, which asks for a password.
      const a = http.createServer((req, res) => {
        hitsAtA++;
        res.writeHead(302, { Location: `http://127.0.0.1:${bPort}${req.url}` }).end();
      });
      await new Promise<void>((r) => a.listen(0, '127.0.0.1', () => r()));
      const aPort = (a.address() as AddressInfo).port;
      try {
        const repo = openProjectRepo({
          location: { projectId: 'redirect', url: `http://127.0.0.1:${aPort}/x.git`, credentials: { username: 'alice', password: 'PW-alice' } },
          mirrorsDir,
          engine: await createEngine('git'),
          mirrors: new MirrorRegistry(),
          policy: { ...base, allowLocalNetworks: true, allowHttpCredentials: true },
        });
        const err = await domainError(repo.readTips(['main']));
        expect(err.code).to.equal('unavailable');
        expect(hitsAtA, 'git did call host-a').to.be.greaterThan(0);
        expect(seenAtB.filter((h) => h !== undefined), 'host-b never saw an Authorization header').to.deep.equal([]);
      } finally {
        a.closeAllConnections();
        b.closeAllConnections();
        await new Promise((r) => a.close(r));
        await new Promise((r) => b.close(r));
      }
    });
  });

  describe('through the API', () => {
    const fx = serverAndRepo({ env: { SVC_REPO_ALLOW_LOCAL_NETWORKS: '0', SVC_REPO_ALLOW_HTTP_CREDENTIALS: '0' } });

    it('local-network URLs, option-like URLs and credentials over http answer 400 naming the rule', async () => {
      const api = client(fx.srv.url, fx.srv.token);
      for (const [url, rule] of [
        ['http://127.0.0.1:1/x', 'local network'],
        ['http://169.254.169.254/latest', 'local network'],
        ['http://[::1]/x.git', 'local network'],
        ['http://0x7f000001/x.git', 'local network'],
        ['https://127.0.0.1/internal/admin?x=1', 'no query string or fragment'],
        ['ssh://-oProxyCommand=touch%20x/y', "no host starting with '-'"],
        ['http://alice:PW@127.0.0.1/x.git', 'credentials need https'],
      ] as const) {
        const r = await api.post('/v1/projects', { name: 'ssrf', repo_url: url });
        expect(r.status, url).to.equal(400);
        expect(r.body.rule, url).to.equal(rule);
        expect(r.body.error).to.equal('Repository URL not allowed');
      }
    });

    it('a file:// path through /proc/self/root into the data dir is refused (realpath)', async () => {
      const api = client(fx.srv.url, fx.srv.token);
      const mine = await api.post('/v1/projects', { name: 'victim', repo_url: fx.repo.url });
      expect(mine.status).to.equal(201);
      const mirror = path.join(fx.srv.dataDir, 'mirrors', `${mine.body.project.project_id}.git`);
      for (const url of [`file:///proc/self/root${mirror}`, `file:///proc/self/cwd/x.git`, `file://${mirror}`]) {
        const r = await api.post('/v1/projects', { name: 'thief', repo_url: url });
        expect(r.status, url).to.equal(400);
        expect(r.body.rule, url).to.be.oneOf(['no /proc paths', 'inside the data dir']);
      }
    });
  });
});
