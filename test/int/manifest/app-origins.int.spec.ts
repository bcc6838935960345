import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { projectRoot } from '../../../lib/paths.js';
import { withProject } from '../../support/server.js';
import { hostRequest } from '../../support/preview-app.js';
import { dashFetch, signInHttp, withPassword } from '../../dashboard/support.js';
import { eventually, mergeChange, projectPath } from './support.js';

// The app answers with what reached it, and tries to set cookies of the dashboard's names
// and for the whole domain.
const SERVER_JS = `const http = require('node:http');
http.createServer((req, res) => {
  if (req.url === '/healthz') return res.end('ok');
  res.writeHead(200, { 'content-type': 'application/json', 'set-cookie': ['__Host-svc_session=forged; Path=/; Secure', 'svc_session=tossed; Domain=localhost; Path=/', 'own=1; Domain=localhost; Path=/'] });
  res.end(JSON.stringify({ app: process.env.SVC_APP_NAME, url: req.url, headers: req.headers }));
}).listen(Number(process.env.PORT), '127.0.0.1');
`;
const MANIFEST = `[[apps]]
name = "priv"
command = "node server.js"
port = 3000
health_path = "/healthz"

[[apps]]
name = "pub"
command = "node server.js"
port = 3000
health_path = "/healthz"
public = true
`;

describe('apps on their own origin', function () {
  this.timeout(120_000);

  it('an app host is served by the server only: members-only by default through a one-time code, public = true for anyone; no svc credential reaches the app', () =>
    withProject({ slug: 'aor', env: { SVC_SCHEDULER: '0', SVC_APP_HEALTH_TIMEOUT_MS: '20000' } }, async (p) => {
      const pp = projectPath(p);
      await mergeChange(p, 'apps', { 'server.js': SERVER_JS, 'svc.toml': MANIFEST });
      const apps = await eventually(async () => {
        const list = (await p.api.get(`${pp}/apps`)).body.apps as Array<{ name: string; status: string; url: string; public: boolean }>;
        return list.length === 2 && list.every((a) => a.status === 'live') ? Object.fromEntries(list.map((a) => [a.name, a])) : null;
      }, 'both apps live', 60_000);
      expect([apps.priv!.public, apps.pub!.public]).to.deep.equal([false, true]);
      const host = (name: string) => new URL(apps[name]!.url).host;
      const projectId = (await p.api.get(pp)).body.project.project_id as string;

      // Public: anyone reaches it; its own Authorization and cookies pass, nothing of this server does.
      const pub = await hostRequest(p.srv.url, host('pub'), '/x?y=1', {
        cookie: '__Host-svc_session=S; svc_session=S2; __Host-svc_pre=P; __Host-svc_preview=G; mine=1', authorization: 'Basic dTpw',
        'x-svc-user-context': 'forged', 'x-api-key': p.srv.token, referer: `${p.srv.url}/projects/secret`,
      });
      expect(pub.status).to.equal(200);
      const seen = JSON.parse(pub.body) as { app: string; url: string; headers: Record<string, string> };
      expect(seen).to.include({ app: 'pub', url: '/x?y=1' });
      expect(seen.headers).to.include({ cookie: 'mine=1', authorization: 'Basic dTpw', host: host('pub') });
      expect(seen.headers).to.not.have.any.keys('x-svc-user-context', 'x-api-key', 'referer');
      // Its cookies stay on its host and take no name of ours.
      expect(pub.headers['set-cookie']).to.deep.equal(['own=1; Path=/']);
      const bearer = JSON.parse((await hostRequest(p.srv.url, host('pub'), '/v1/projects', { authorization: `Bearer ${p.srv.token}` })).body);
      expect(bearer.app).to.equal('pub'); // the app, never the API, answers its host
      expect(bearer.headers).to.not.have.any.keys('authorization');

      // Members only: without the cookie a page goes to the dashboard's door, anything else is refused.
      const nav = await hostRequest(p.srv.url, host('priv'), '/deep?q=1', { 'sec-fetch-mode': 'navigate' });
      expect(nav.status).to.equal(303);
      expect(nav.headers.location).to.equal(`${p.srv.url}/projects/${projectId}/apps/priv/open?path=%2Fdeep%3Fq%3D1`);
      expect((await hostRequest(p.srv.url, host('priv'), '/deep', { 'sec-fetch-mode': 'cors' })).status).to.equal(401);
      expect((await hostRequest(p.srv.url, host('priv'), '/deep', { authorization: `Bearer ${p.srv.token}` })).status).to.equal(401);

      // The door: a member gets a one-time code for this app's origin, redeemed there for a host-only cookie.
      await withPassword(p.srv);
      const dash = await signInHttp(p.srv.url);
      const go = await dashFetch(p.srv.url, dash, `/projects/${projectId}/apps/priv/open?path=${encodeURIComponent('/deep?q=1')}`);
      expect(go.status).to.equal(303);
      const to = new URL(go.location!);
      expect(to.host).to.equal(host('priv'));
      const redeemed = await hostRequest(p.srv.url, to.host, `${to.pathname}${to.search}`);
      expect([redeemed.status, redeemed.headers.location]).to.deep.equal([303, '/deep?q=1']);
      const set = redeemed.headers['set-cookie']![0]!;
      expect(set).to.match(/^__Host-svc_preview=[^;]+; Path=\/; Max-Age=\d+; HttpOnly; Secure; SameSite=Lax$/);
      const grant = set.split(';')[0]!;
      const inside = await hostRequest(p.srv.url, host('priv'), '/deep?q=1', { cookie: `${grant}; mine=2` });
      expect(inside.status).to.equal(200);
      expect(JSON.parse(inside.body).headers.cookie).to.equal('mine=2');
      // The code works once; the grant opens no other origin (here: a preview's).
      expect((await hostRequest(p.srv.url, to.host, `${to.pathname}${to.search}`)).status).to.equal(400);
      const previewHost = `p3000-00000000-0000-4000-8000-000000000000.localhost:${new URL(p.srv.url).port}`;
      expect((await hostRequest(p.srv.url, previewHost, '/', { cookie: grant })).status).to.equal(401);

      // Another account's user gets no code, and a name under the domain that is no app is 404.
      const stranger = await p.srv.newUser('stranger@example.test');
      await withPassword(p.srv, 'stranger@example.test');
      const theirs = await signInHttp(p.srv.url, 'stranger@example.test');
      expect((await dashFetch(p.srv.url, theirs, `/projects/${projectId}/apps/priv/open`, { accept: 'application/json' })).status).to.equal(404);
      expect(stranger.userId).to.not.equal(p.srv.userId);
      expect((await hostRequest(p.srv.url, `nope-${projectId.replace(/-/g, '').slice(0, 12)}.localhost`, '/')).status).to.equal(404);
      expect((await hostRequest(p.srv.url, 'not.an.app.localhost', '/')).status).to.equal(404);
    }));

  it('the server refuses to start when the dashboard host falls under the apps or preview domain, naming both settings', async () => {
    const dataDir = await mkdtemp(path.join(os.tmpdir(), 'svc-app-origins-'));
    try {
      const start = (env: Record<string, string>) =>
        new Promise<{ code: number | null; err: string }>((resolve) => {
          const proc = spawn(process.execPath, [path.join(projectRoot, 'dist/ops/svc-server.js'), 'start'], {
            env: { PATH: process.env.PATH ?? '', SVC_DATA_DIR: dataDir, PORT: '0', ...env }, stdio: ['ignore', 'ignore', 'pipe'],
          });
          let err = '';
          proc.stderr!.on('data', (c: Buffer) => (err += c.toString()));
          proc.once('exit', (code) => resolve({ code, err }));
        });
      const underApps = await start({ SVC_PUBLIC_URL: 'https://svc.test', SVC_PREVIEW_DOMAIN: 'preview.example', SVC_APPS_DOMAIN: 'svc.test' });
      expect(underApps.code).to.equal(2);
      expect(underApps.err).to.match(/SVC_APPS_DOMAIN: must not hold the dashboard's host svc\.test \(SVC_PUBLIC_URL\)/);
      const deeper = await start({ SVC_PUBLIC_URL: 'https://dash.apps.svc.test', SVC_PREVIEW_DOMAIN: 'preview.example', SVC_APPS_DOMAIN: 'apps.svc.test' });
      expect([deeper.code, /SVC_APPS_DOMAIN.*SVC_PUBLIC_URL/.test(deeper.err)]).to.deep.equal([2, true]);
      const underPreviews = await start({ SVC_PUBLIC_URL: 'https://svc.test', SVC_PREVIEW_DOMAIN: 'svc.test', SVC_APPS_DOMAIN: 'apps.example' });
      expect([underPreviews.code, /SVC_PREVIEW_DOMAIN.*SVC_PUBLIC_URL/.test(underPreviews.err)]).to.deep.equal([2, true]);
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});
