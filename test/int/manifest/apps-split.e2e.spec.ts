import { randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { expect } from 'chai';
import { probeBwrap } from '../../../infra/sandbox/bwrap.js';
import { bootstrapUser } from '../../../services/accounts/service.js';
import { createTestDb, type TestDb } from '../../support/db.js';
import { fixtureRepo, type FixtureRepo } from '../../support/repo.js';
import { client } from '../../support/http.js';
import { hostRequest } from '../../support/preview-app.js';
import { spawnTestServer, traversableTempDir, type SpawnedServer, type TestProject } from '../../support/server.js';
import { skipUnlessCi } from '../../support/skip.js';
import { eventually, mergeChange } from './support.js';

const SERVER_JS = `require('node:http').createServer((req, res) => res.end(req.url === '/healthz' ? 'ok' : 'served by ' + process.env.SVC_APP_NAME)).listen(Number(process.env.PORT), '127.0.0.1');\n`;

/**
 * An api process and a worker process, each with its own data directory, on one database:
 * the worker deploys the app into a bwrap sandbox; the API, which started nothing, serves
 * it on its own origin through the sandbox's socket, as it serves a session's preview.
 */
describe('apps with split api and worker processes', function () {
  this.timeout(180_000);
  let t: TestDb | undefined;
  let repo: FixtureRepo | undefined;
  const procs: SpawnedServer[] = [];
  const dirs: string[] = [];

  before(function () {
    const probe = probeBwrap();
    if (!probe.ok) skipUnlessCi(this, `bubblewrap cannot run here: ${probe.reason}`);
  });
  after(async () => {
    await Promise.all(procs.map((p) => p.stop()));
    await t?.drop();
    await repo?.cleanup();
    await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
  });

  it('the API serves an app a worker started, through the app sandbox\'s socket', async () => {
    t = await createTestDb();
    repo = await fixtureRepo();
    const env = { DATABASE_URL: t.url, SVC_SECRET_KEY: randomBytes(32).toString('base64'), LOG_LEVEL: 'warn', SVC_SANDBOX_PROVIDER: 'bwrap', SVC_SCHEDULER: '0', SVC_APP_HEALTH_TIMEOUT_MS: '20000' };
    const start = async (role: 'api' | 'worker') => {
      const dataDir = await traversableTempDir(`svc-apps-${role}-`);
      dirs.push(dataDir);
      const p = await spawnTestServer({ ...env, SVC_DATA_DIR: dataDir }, role);
      procs.push(p);
      return { p, dataDir };
    };
    const [api, worker] = await Promise.all([start('api'), start('worker')]);
    const { token } = (await bootstrapUser(t.db, { email: 'split@example.test' })).token;
    const c = client(api.p.url, token);
    expect((await c.post('/v1/projects', { name: 'Split', slug: 'split', repo_url: repo.url })).status).to.equal(201);
    await mergeChange({ repo, api: c, base: '/v1/projects/split/change-requests' } as unknown as TestProject, 'app', {
      'server.js': SERVER_JS,
      'svc.toml': '[[apps]]\nname = "web"\ncommand = "node server.js"\nport = 3000\nhealth_path = "/healthz"\npublic = true\n',
    });
    const app = await eventually(async () => {
      const a = (await c.get('/v1/projects/split/apps/web')).body.app;
      return a?.status === 'live' ? a : a?.status === 'failed' ? Promise.reject(new Error(a.last_error)) : null;
    }, 'the app live', 90_000);
    const row = await t.db.one<{ target: string }>({ text: "SELECT target FROM apps WHERE name = 'web'", values: [] });
    expect(row!.target.startsWith(`unix:${worker.dataDir}/`), row!.target).to.equal(true);
    const served = await hostRequest(api.p.url, new URL(app.url).host, '/');
    expect([served.status, served.body]).to.deep.equal([200, 'served by web']);
  });
});
