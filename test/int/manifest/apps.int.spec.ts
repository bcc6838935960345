import { expect } from 'chai';
import { withProject, type TestProject } from '../../support/server.js';
import { hostRequest } from '../../support/preview-app.js';
import { sandboxFetch } from '../../../lib/sandbox-dial.js';
import { appsState, eventually, mergeChange, projectPath } from './support.js';

const SERVER_JS = `const http = require('node:http');
http.createServer((req, res) => {
  if (req.url === '/healthz') return res.end('ok');
  res.end(process.env.VERSION + ':' + (process.env.GREETING || '') + ':' + process.env.SVC_COMMIT_SHA);
}).listen(Number(process.env.PORT), '127.0.0.1');
`;
const manifest = (version: string) => `[[apps]]
name = "web"
command = "node server.js"
port = 3000
health_path = "/healthz"
public = true
env = { VERSION = "${version}" }
`;

/** The app at `url` (its own origin, `*.localhost` locally) as the server serves it: its body, or null. */
const getter = (p: TestProject) => async (url: string) => {
  const r = await hostRequest(p.srv.url, new URL(url).host, '/');
  return r.status === 200 ? r.body : null;
};

/** Whether the version behind a recorded target (the sandbox itself) still answers. */
const answers = async (target: string) => {
  try {
    await (await sandboxFetch(target, '/', { signal: AbortSignal.timeout(2000) })).text();
    return true;
  } catch {
    return false;
  }
};
const targetOf = async (p: TestProject) => (await p.srv.db.db.one<{ target: string }>({ text: "SELECT target FROM apps WHERE name = 'web'", values: [] }))!.target;

describe('apps follow [[apps]] on the default branch', function () {
  this.timeout(120_000);

  it('deploys on a merge that changes the entry, stops the previous one, deploys nothing on other merges, stops a removed app', () =>
    withProject({ slug: 'apps', env: { SVC_SCHEDULER: '0', SVC_APP_HEALTH_TIMEOUT_MS: '20000' } }, async (p) => {
      const pp = projectPath(p);
      const get = getter(p);
      expect((await p.api.call('PUT', `${pp}/secrets/GREETING`, { value: 'hello' })).status).to.equal(204);
      const sha1 = await mergeChange(p, 'app-v1', { 'server.js': SERVER_JS, 'svc.toml': manifest('v1') });
      const live1 = await eventually(async () => {
        const a = (await p.api.get(`${pp}/apps/web`)).body.app;
        return a?.status === 'live' && a.commit_sha === sha1 ? a : null;
      }, 'v1 live', 60_000, appsState(p));
      expect(Object.keys((await p.api.get(`${pp}/apps`)).body.apps[0])).to.deep.equal(['name', 'status', 'commit_sha', 'url', 'public', 'manifest_hash', 'deployed_at', 'last_error']);
      const project = (await p.api.get(pp)).body.project as { project_id: string };
      expect(live1.url).to.equal(`http://web-${project.project_id.replace(/-/g, '').slice(0, 12)}.localhost:${new URL(p.srv.url).port}/`);
      expect(await get(live1.url)).to.equal(`v1:hello:${sha1}`);
      const target1 = await targetOf(p);

      const sha2 = await mergeChange(p, 'app-v2', { 'svc.toml': manifest('v2') });
      const live2 = await eventually(async () => {
        const a = (await p.api.get(`${pp}/apps/web`)).body.app;
        return a?.status === 'live' && a.commit_sha === sha2 ? a : null;
      }, 'v2 live', 60_000, appsState(p));
      expect(live2.url).to.equal(live1.url); // the app's origin; the version behind it changed
      expect(live2.manifest_hash).to.not.equal(live1.manifest_hash);
      expect(await get(live2.url)).to.equal(`v2:hello:${sha2}`);
      expect(await targetOf(p)).to.not.equal(target1);
      await eventually(async () => !(await answers(target1)), 'the previous version to stop');
      const target2 = await targetOf(p);
      expect(live2.deploys.map((d: { status: string }) => d.status)).to.deep.equal(['live', 'live']);

      // A merge that leaves the manifest alone: synced, and nothing deployed.
      const sha3 = await mergeChange(p, 'docs', { 'README.md': 'docs\n' });
      await eventually(async () => (await p.api.get(`${pp}/manifest`)).body.source_sha === sha3, 'sync of the docs merge');
      const changes = await p.srv.db.db.rows({ text: "SELECT 1 FROM events WHERE type = 'AppChanged'", values: [] });
      expect(changes).to.have.length(2);
      const app3 = (await p.api.get(`${pp}/apps/web`)).body.app;
      expect(app3).to.include({ commit_sha: sha2, url: live2.url });
      expect(app3.deploys).to.have.length(2);

      // Removing the entry stops the app.
      await mergeChange(p, 'no-apps', { 'svc.toml': '' });
      await eventually(async () => (await p.api.get(`${pp}/apps/web`)).body.app.status === 'removed', 'removal');
      await eventually(async () => !(await answers(target2)), 'the removed app to stop');
      expect(await get(live2.url)).to.equal(null);
      expect((await p.api.get(`${pp}/apps`)).body.apps).to.deep.equal([]);
      const appEvents = async () => (await p.srv.db.db.rows<{ type: string }>({ text: "SELECT type FROM events WHERE stream_id LIKE 'apps-%' ORDER BY global_position", values: [] })).map((e) => e.type);
      const types = await eventually(async () => {
        const t = await appEvents();
        return t[t.length - 1] === 'AppStopped' ? t : null;
      }, 'the stop to be recorded');
      expect(types).to.deep.equal(['AppChanged', 'AppDeployStarted', 'AppDeployed', 'AppChanged', 'AppDeployStarted', 'AppDeployed', 'AppRemoved', 'AppStopped']);
    }));

  it('a version that never becomes healthy fails its deploy with the error and leaves the previous one serving', () =>
    withProject({ slug: 'apps-fail', env: { SVC_SCHEDULER: '0', SVC_APP_HEALTH_TIMEOUT_MS: '3000' } }, async (p) => {
      const pp = projectPath(p);
      const get = getter(p);
      await mergeChange(p, 'v1', { 'server.js': SERVER_JS, 'svc.toml': manifest('v1') });
      const live = await eventually(async () => {
        const a = (await p.api.get(`${pp}/apps/web`)).body.app;
        return a?.status === 'live' ? a : null;
      }, 'v1 live', 60_000, appsState(p));
      await mergeChange(p, 'broken', { 'svc.toml': manifest('v1').replace('node server.js', 'exit 3') });
      const failed = await eventually(async () => {
        const a = (await p.api.get(`${pp}/apps/web`)).body.app;
        return a?.deploys?.[0]?.status === 'failed' ? a : null;
      }, 'the failed deploy', 60_000, appsState(p));
      expect(failed.last_error).to.match(/exited/);
      // Why: the tail of what the version printed, its exit code in it.
      expect(failed.last_error).to.match(/its log ends:\n[\s\S]*"code":3/);
      expect(failed.url).to.equal(live.url);
      expect(await get(live.url)).to.match(/^v1:/);
    }));
});
