import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { bootstrapUser } from '../../../services/accounts/service.js';
import { createProjectRepos, type ProjectRepos } from '../../../infra/git/project-repos.js';
import type { ProjectRecord } from '../../../domain/project.js';
import { createEngine } from '../../../infra/git/engine.js';
import { silentLogger } from '../../../lib/logger.js';
import { syncManifest } from '../../../services/manifest/sync.js';
import { secretBox } from '../../../infra/secret-box.js';
import { handleSessionCommand } from '../../../services/sessions/handle.js';
import { egressRefusals, egressRulesFor, type EgressRefusals } from '../../../services/sessions/egress.js';
import { egressPolicy } from '../../../infra/egress/policy.js';
import { startEgressProxy, type EgressIdentity, type EgressProxy } from '../../../infra/egress/proxy.js';
import { readStream } from '../../../infra/event-store.js';
import { sessionStreamId } from '../../../domain/session/index.js';
import { projectQueries } from '../../../sql/queries/projects.js';
import { createTestDb, type TestDb } from '../../support/db.js';
import { fixtureRepo, type FixtureRepo } from '../../support/repo.js';
import { until } from '../../support/wait.js';
import { countingServer, viaConnect, viaGet, type CountingServer } from './support.js';
import { MemoryQueue } from '../../support/memory-queue.js';
import { APP_DEPLOY, type AppJob } from '../../../services/apps/sync.js';

/**
 * The egress table: a sandbox's connections through the proxy, each
 * decided before any connection is made. Names resolve only through the test's resolver;
 * the proxy dials through a recording dialer that maps two public addresses to loopback
 * test servers (the "internet") and otherwise dials for real, so a refused row that got
 * through would reach the loopback servers that count every connection. The manifest in
 * force comes from real syncs of svc.toml in a real repository.
 */
describe('egress proxy', function () {
  this.timeout(60_000);
  const PUBLIC_A = '93.184.215.14';
  const PUBLIC_B = '93.184.215.15';
  const PUBLIC_C = '93.184.215.16';
  let db: TestDb;
  let repo: FixtureRepo;
  let dataDir: string;
  let repos: ProjectRepos;
  /** App deploys a sync decides: queued, never run here (no app in these manifests). */
  const apps = new MemoryQueue();
  const appJobs = async (job: AppJob) => void (await apps.enqueue(APP_DEPLOY, job));
  let userId: string;
  let accountId: string;
  let target: CountingServer;
  let publicB: CountingServer;
  let loopV4: CountingServer;
  let loopV6: CountingServer | null;
  let streaming: http.Server;
  let proxy: EgressProxy;
  let refusals: EgressRefusals;
  let clock = new Date('2026-11-25T12:00:00Z');
  const dials: string[] = [];
  const asked: string[] = [];
  const fronts: net.Server[] = [];
  const hostAddresses = Object.values(os.networkInterfaces()).flatMap((l) => (l ?? []).map((i) => i.address.split('%')[0]!));
  let rebindAsked = 0;

  const names: Record<string, () => string[]> = {
    'allowed.test': () => [PUBLIC_A],
    'a.pkg.test': () => [PUBLIC_A],
    'pkg.test': () => [PUBLIC_A],
    'alt.test': () => [PUBLIC_A],
    'other.test': () => [PUBLIC_A],
    'second.test': () => [PUBLIC_A],
    localhost: () => ['127.0.0.1', '::1'],
    'metadata.test': () => ['169.254.169.254'],
    'metadata6.test': () => ['fd00:ec2::254'],
    'intranet.test': () => ['192.168.1.10'],
    'cgnat.test': () => ['100.64.0.1'],
    'mixed.test': () => [PUBLIC_A, '10.0.0.7'],
    'mapped.test': () => ['::ffff:127.0.0.1'],
    'stream.test': () => [PUBLIC_C],
    // Public at the check, loopback at any later lookup.
    'rebind.test': () => (rebindAsked++ === 0 ? [PUBLIC_B] : ['127.0.0.1']),
    ...Object.fromEntries(hostAddresses.map((a, i) => [`self-${i}.test`, () => [a]])),
  };
  const resolve = async (host: string) => {
    asked.push(host);
    const f = names[host];
    if (!f) throw new Error('ENOTFOUND');
    return f();
  };
  const dial = (address: string, port: number) => {
    dials.push(`${address}:${port}`);
    if (address === PUBLIC_A) return net.connect(target.port, '127.0.0.1');
    if (address === PUBLIC_B) return net.connect(publicB.port, '127.0.0.1');
    if (address === PUBLIC_C) return net.connect((streaming.address() as net.AddressInfo).port, '127.0.0.1');
    return net.connect(port, address);
  };

  /** A project whose default branch carries `toml` as svc.toml, synced into force. */
  const newProject = async (slug: string, toml: string | null): Promise<ProjectRecord> => {
    const branch = `main-${slug}`;
    await repo.commit(branch, { 'svc.toml': toml }, { from: 'main' });
    const project = (await db.db.one<ProjectRecord>(
      projectQueries.insert({ projectId: randomUUID(), accountId, name: slug, slug, repoUrl: repo.url, repoCredentialsEnc: null, defaultBranch: branch }),
    ))!;
    expect((await syncManifest({ db: db.db, repos, logger: silentLogger, enqueueApp: appJobs }, project, 'test')).errors).to.deep.equal([]);
    return project;
  };
  /** A session with a live sandbox in `project`, and a port where the proxy serves that sandbox (the gateway's part). */
  const sandboxOf = async (project: ProjectRecord, p: EgressProxy = proxy): Promise<{ id: EgressIdentity; sessionId: string; port: number }> => {
    const sessionId = randomUUID();
    const sandboxId = randomUUID();
    const meta = { actor: userId, now: clock };
    await handleSessionCommand(db.db, sessionId, () => ({
      type: 'CreateSession',
      data: { session_id: sessionId, account_id: accountId, project_id: project.project_id, base_ref: 'main', agent: 'build', model: null, prompt: null, trigger: null },
      meta,
    }));
    await handleSessionCommand(db.db, sessionId, () => ({ type: 'RequestSandbox', data: { sandbox_id: sandboxId, provider: 'process' }, meta }));
    const id = { sandboxId, projectId: project.project_id };
    const front = net.createServer((socket) => p.handle(socket, id));
    fronts.push(front);
    await new Promise<void>((r) => front.listen(0, '127.0.0.1', () => r()));
    return { id, sessionId, port: (front.address() as net.AddressInfo).port };
  };

  let open: Awaited<ReturnType<typeof sandboxOf>>;
  let listed: Awaited<ReturnType<typeof sandboxOf>>;
  let none: Awaited<ReturnType<typeof sandboxOf>>;
  let listedProject: ProjectRecord;

  before(async () => {
    db = await createTestDb();
    repo = await fixtureRepo();
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'svc-egress-'));
    repos = createProjectRepos({ dataDir, engine: await createEngine('git'), secrets: secretBox(randomBytes(32)), logger: silentLogger });
    const u = await bootstrapUser(db.db, { email: 'egress@example.test' });
    userId = u.user_id;
    accountId = u.account_id;
    target = await countingServer('127.0.0.1', 'target');
    publicB = await countingServer('127.0.0.1', 'publicB');
    loopV4 = await countingServer('127.0.0.1', 'loopback');
    loopV6 = await countingServer('::1', 'loopback6').catch(() => null);
    // Answers each chunk of a request body as it arrives: a proxy that buffered either
    // direction would deadlock the exchange below.
    streaming = http.createServer((req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      req.on('data', (d: Buffer) => res.write(`got ${d.toString()};`));
      req.on('end', () => res.end('end'));
    });
    await new Promise<void>((r) => streaming.listen(0, '127.0.0.1', () => r()));
    refusals = egressRefusals({ db: db.db, logger: silentLogger, now: () => clock });
    proxy = startEgressProxy({
      policy: egressPolicy({ resolve }),
      rulesFor: egressRulesFor({ db: db.db, repos }),
      onRefused: (id, r) => refusals.record(id, r),
      logger: silentLogger,
      dial,
    });
    open = await sandboxOf(await newProject('open', '[sandbox]\ncpus = 1\n'));
    listedProject = await newProject('listed', '[sandbox]\negress = ["allowed.test", "*.pkg.test", "alt.test:8443"]\n');
    listed = await sandboxOf(listedProject);
    none = await sandboxOf(await newProject('none', '[sandbox]\negress = []\n'));
  });
  after(async () => {
    await proxy?.close();
    await refusals?.settled();
    for (const f of fronts) await new Promise((r) => f.close(r));
    for (const s of [target, publicB, loopV4, loopV6]) await s?.close();
    streaming?.closeAllConnections();
    await new Promise((r) => (streaming ? streaming.close(r) : r(null)));
    await db?.drop();
    await repo?.cleanup();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });
  beforeEach(() => {
    dials.length = 0;
    asked.length = 0;
  });

  describe('the table: refused before any connection is made (key absent: the public internet only)', () => {
    const rows = (): Array<[string, string, RegExp]> => [
      ['loopback literal', `127.0.0.1:${loopV4.port}`, /127\.0\.0\.1 is an IP address/],
      ['IPv6 loopback literal', `[::1]:${loopV6?.port ?? loopV4.port}`, /::1 is an IP address/],
      ['localhost by name', `localhost:${loopV4.port}`, /resolves to 127\.0\.0\.1/],
      ['integer spelling of 127.0.0.1', `2130706433:${loopV4.port}`, /IP address/],
      ['hex spelling of 127.0.0.1', `0x7f.1:${loopV4.port}`, /IP address/],
      ['metadata literal', '169.254.169.254:80', /IP address/],
      ['a name for the metadata address', 'metadata.test:80', /resolves to 169\.254\.169\.254/],
      ['a name for the IPv6 metadata address', 'metadata6.test:80', /resolves to fd00:ec2::254/],
      ['private literal', '10.0.0.5:443', /IP address/],
      ['a name for a private address', 'intranet.test:443', /resolves to 192\.168\.1\.10/],
      ['a name for a CGNAT address', 'cgnat.test:443', /resolves to 100\.64\.0\.1/],
      ['a name with one public and one private address', 'mixed.test:443', /resolves to 10\.0\.0\.7/],
      ['a name for an IPv4-mapped loopback address', 'mapped.test:443', /resolves to ::ffff:127\.0\.0\.1/],
      ['an IPv4-mapped loopback literal', `[::ffff:7f00:1]:${loopV4.port}`, /IP address/],
      ...hostAddresses.flatMap((a, i): Array<[string, string, RegExp]> => [
        [`the host's own address ${a}`, `${net.isIPv6(a) ? `[${a}]` : a}:${loopV4.port}`, /IP address/],
        [`a name for the host's own address ${a}`, `self-${i}.test:${loopV4.port}`, /resolves to/],
      ]),
    ];

    it('CONNECT: every row answers 403 with its reason; nothing was dialed, no loopback server saw a connection', async () => {
      expect(hostAddresses.length).to.be.greaterThan(0);
      for (const [what, to, reason] of rows()) {
        const r = await viaConnect(open.port, to);
        expect(r.status, what).to.equal(403);
        expect(r.body, what).to.match(/^egress refused: .+\n$/).and.match(reason);
        expect(r.body.trim().split('\n'), what).to.have.length(1);
      }
      expect(dials).to.deep.equal([]);
      expect(loopV4.connections).to.equal(0);
      expect(loopV6?.connections ?? 0).to.equal(0);
    });

    it('absolute-form http: the same rows answer 403; nothing was dialed', async () => {
      for (const [what, to, reason] of rows()) {
        const r = await viaGet(open.port, `http://${to}/latest/meta-data/`);
        expect(r.status, what).to.equal(403);
        expect(r.body, what).to.match(reason);
      }
      expect(dials).to.deep.equal([]);
      expect(loopV4.connections).to.equal(0);
    });

    it("the host's own addresses are refused even when they are public", async () => {
      const policy = egressPolicy({ resolve: async () => [PUBLIC_A], ownAddresses: () => new Set([PUBLIC_A]) });
      const d = await policy.check('me.test', 443, null);
      expect(d).to.include({ ok: false, rule: 'own address' });
      const mapped = egressPolicy({ resolve: async () => [`::ffff:${PUBLIC_A}`], ownAddresses: () => new Set([PUBLIC_A]) });
      expect(await mapped.check('me.test', 443, null)).to.include({ ok: false, rule: 'own address' });
    });

    it("the operator's blocked hosts are refused before any lookup; a name that does not resolve is refused", async () => {
      const policy = egressPolicy({ resolve, blockedHosts: ['*.blocked.test'] });
      expect(await policy.check('a.blocked.test', 443, null)).to.include({ ok: false, rule: 'blocked host' });
      expect(await policy.check('nowhere.test', 443, null)).to.include({ ok: false, rule: 'does not resolve' });
      expect(asked).to.deep.equal(['nowhere.test']);
    });

    it('a plain-http upgrade (ws://) is refused; a request that is not absolute-form is a 400', async () => {
      const up = await new Promise<number>((resolve, reject) => {
        const req = http.request({ host: '127.0.0.1', port: open.port, path: 'http://allowed.test/ws', agent: false, headers: { connection: 'Upgrade', upgrade: 'websocket' } });
        req.on('response', (r) => (r.resume(), resolve(r.statusCode ?? 0)));
        req.on('upgrade', (r, sock) => (sock.destroy(), resolve(r.statusCode ?? 0)));
        req.on('error', reject);
        req.end();
      });
      expect(up).to.equal(501);
      expect((await viaGet(open.port, '/relative')).status).to.equal(400);
      expect(dials).to.deep.equal([]);
    });

    it('a name that rebinds to loopback: resolved once, the connection pinned to the public address it was checked with', async () => {
      rebindAsked = 0;
      const first = await viaConnect(open.port, 'rebind.test:443');
      expect(first.status).to.equal(200);
      expect(first.body).to.match(/^publicB GET \/tunnel/);
      expect(dials).to.deep.equal([`${PUBLIC_B}:443`]);
      expect(asked.filter((h) => h === 'rebind.test')).to.have.length(1);
      // Its next connection sees loopback at the check and is refused.
      const second = await viaConnect(open.port, 'rebind.test:443');
      expect(second.status).to.equal(403);
      expect(second.body).to.match(/resolves to 127\.0\.0\.1/);
      expect(dials).to.deep.equal([`${PUBLIC_B}:443`]);
      expect(loopV4.connections).to.equal(0);
    });

    it('key absent: a public name on any port is reached', async () => {
      const r = await viaConnect(open.port, 'other.test:8080');
      expect(r.status).to.equal(200);
      expect(dials).to.deep.equal([`${PUBLIC_A}:8080`]);
    });
  });

  describe('[sandbox] egress', () => {
    it('an allowed name reaches its server through CONNECT', async () => {
      const r = await viaConnect(listed.port, 'allowed.test:443');
      expect(r.status).to.equal(200);
      expect(r.body).to.match(/^target GET \/tunnel/);
      expect(dials).to.deep.equal([`${PUBLIC_A}:443`]);
    });

    it('an allowed name reaches its server through absolute-form http; Host comes from the URL and Proxy-Authorization never passes', async () => {
      const before = target.connections;
      const r = await viaGet(listed.port, 'http://allowed.test/hello?x=1');
      expect(r.status).to.equal(200);
      expect(r.body).to.equal('target GET /hello?x=1 host=allowed.test via=-');
      expect(dials).to.deep.equal([`${PUBLIC_A}:80`]);
      expect(target.connections).to.equal(before + 1);
    });

    it('entries: *.suffix matches names under it only; ports are 80/443 unless the entry names one', async () => {
      const cases: Array<[string, number]> = [
        ['a.pkg.test:443', 200],
        ['pkg.test:443', 403],
        ['allowed.test:8080', 403],
        ['alt.test:8443', 200],
        ['alt.test:443', 403],
      ];
      for (const [to, status] of cases) expect((await viaConnect(listed.port, to)).status, to).to.equal(status);
    });

    it('an unlisted host is refused without even being looked up', async () => {
      const r = await viaConnect(listed.port, 'other.test:443');
      expect(r.status).to.equal(403);
      expect(r.body).to.match(/other\.test:443 is not in this project's \[sandbox\] egress list/);
      expect(asked).to.deep.equal([]);
      expect(dials).to.deep.equal([]);
    });

    it('egress = [] refuses everything', async () => {
      for (const to of ['allowed.test:443', 'other.test:443', '127.0.0.1:80']) {
        const r = await viaConnect(none.port, to);
        expect(r.status, to).to.equal(403);
      }
      expect((await viaGet(none.port, 'http://allowed.test/')).body).to.match(/egress = \[\]/);
      expect(dials).to.deep.equal([]);
      expect(asked).to.deep.equal([]);
      // Refused sockets end: none stays half-open against the sandbox's limit.
      await until(() => proxy.usage(none.id.sandboxId).clients === 0, 'refused sockets closed');
    });

    it('the manifest in force is read per connection: a merged change applies to the running sandbox', async () => {
      expect((await viaConnect(listed.port, 'allowed.test:443')).status).to.equal(200);
      await repo.commit(listedProject.default_branch, { 'svc.toml': '[sandbox]\negress = ["second.test"]\n' });
      await syncManifest({ db: db.db, repos, logger: silentLogger, enqueueApp: appJobs }, listedProject, 'test');
      expect((await viaConnect(listed.port, 'allowed.test:443')).status).to.equal(403);
      expect((await viaConnect(listed.port, 'second.test:443')).status).to.equal(200);
    });
  });

  describe('streaming', () => {
    it('bodies stream both ways through absolute-form http (nothing waits for a whole body)', async () => {
      const text = await new Promise<string>((resolve, reject) => {
        const req = http.request({ host: '127.0.0.1', port: open.port, method: 'POST', path: 'http://stream.test/up', agent: false }, (res) => {
          let got = '';
          res.setEncoding('utf8');
          res.on('data', (d: string) => {
            got += d;
            // The second half goes only once the first came back through the proxy.
            if (got === 'got first;') req.end('second');
          });
          res.on('end', () => resolve(got));
          res.on('error', reject);
        });
        req.on('error', reject);
        req.flushHeaders();
        req.write('first');
      });
      expect(text).to.equal('got first;got second;end');
    });
  });

  describe('refusals in the session history', () => {
    it('at most one SessionEgressRefused per host per minute', async () => {
      const s = await sandboxOf(listedProject); // allows second.test only now
      clock = new Date('2026-11-25T13:00:00Z');
      await viaConnect(s.port, 'other.test:443');
      await viaGet(s.port, 'http://other.test/');
      await viaConnect(s.port, 'other.test:22');
      await viaConnect(s.port, 'third.test:443');
      clock = new Date('2026-11-25T13:00:59Z');
      await viaConnect(s.port, 'other.test:443');
      clock = new Date('2026-11-25T13:01:01Z');
      await viaConnect(s.port, 'other.test:8443');
      await refusals.settled();
      const events = (await readStream(db.db, sessionStreamId(s.sessionId))).filter((e) => e.type === 'SessionEgressRefused');
      expect(events.map((e) => [(e.data as any).host, (e.data as any).port, (e.data as any).at])).to.deep.equal([
        ['other.test', 443, '2026-11-25T13:00:00.000Z'],
        ['third.test', 443, '2026-11-25T13:00:00.000Z'],
        ['other.test', 8443, '2026-11-25T13:01:01.000Z'],
      ]);
      expect((events[0]!.data as any).reason).to.match(/^other\.test:443 is not in this project's \[sandbox\] egress list/);
      expect((events[0]!.data as any).sandbox_id).to.equal(s.id.sandboxId);
    });

    it("a sandbox named with another project (a wrong pairing) writes into no session's history", async () => {
      const before = (await readStream(db.db, sessionStreamId(listed.sessionId))).length;
      clock = new Date('2026-11-25T14:00:00Z');
      refusals.record({ sandboxId: listed.id.sandboxId, projectId: open.id.projectId }, { ok: false, host: 'x.test', port: 443, rule: 'not listed', reason: 'x' });
      await refusals.settled();
      expect((await readStream(db.db, sessionStreamId(listed.sessionId))).length).to.equal(before);
      expect((await readStream(db.db, sessionStreamId(open.sessionId))).filter((e) => (e.data as any).host === 'x.test')).to.deep.equal([]);
    });
  });

  describe('bounds', () => {
    it('connections per sandbox are limited; another sandbox is unaffected; a silent client is dropped', async () => {
      const small = startEgressProxy({ policy: egressPolicy({ resolve }), rulesFor: egressRulesFor({ db: db.db, repos }), logger: silentLogger, dial, maxConnectionsPerSandbox: 2, headersTimeoutMs: 1500 });
      try {
        const project = await newProject('bounds', '[sandbox]\negress = ["second.test"]\n');
        const a = await sandboxOf(project, small);
        const b = await sandboxOf(project, small);
        const held = await Promise.all([0, 1].map(() => new Promise<net.Socket>((r) => { const c = net.connect(a.port, '127.0.0.1', () => r(c)); })));
        await until(() => small.usage(a.id.sandboxId).clients === 2, 'two held sockets');
        const third = await viaConnect(a.port, 'second.test:443');
        expect(third.status).to.equal(429);
        expect((await viaConnect(b.port, 'second.test:443')).status).to.equal(200);
        // The held sockets never send a request: the first-request deadline closes them.
        await Promise.all(held.map((c) => new Promise((r) => (c.destroyed ? r(null) : c.once('close', r)))));
        await until(() => small.usage(a.id.sandboxId).clients === 0, 'the held sockets released');
        expect((await viaConnect(a.port, 'second.test:443')).status).to.equal(200);
      } finally {
        await small.close();
      }
    });

    it('an idle tunnel is closed', async () => {
      const quick = startEgressProxy({ policy: egressPolicy({ resolve }), rulesFor: async () => null, logger: silentLogger, dial, idleMs: 300 });
      try {
        const s = await sandboxOf(listedProject, quick);
        const c = net.connect(s.port, '127.0.0.1');
        await new Promise((r) => c.once('connect', r));
        c.write('CONNECT other.test:443 HTTP/1.1\r\nHost: other.test:443\r\n\r\n');
        const head = await new Promise<string>((r) => c.once('data', (d: Buffer) => r(d.toString())));
        expect(head).to.match(/^HTTP\/1\.1 200/);
        await until(() => quick.usage(s.id.sandboxId).upstream === 1, 'the tunnel open');
        // Nothing is sent either way: the idle limit ends both sides.
        await new Promise((r) => (c.destroyed ? r(null) : c.once('close', r)));
        await until(() => quick.usage(s.id.sandboxId).upstream === 0 && quick.usage(s.id.sandboxId).clients === 0, 'both sides released');
      } finally {
        await quick.close();
      }
    });
  });
});
