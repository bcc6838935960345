import { expect } from 'chai';
import WebSocket from 'ws';
import { client } from '../../support/http.js';
import { hostRequest, startPreviewApp, type PreviewApp } from '../../support/preview-app.js';
import { agentReady, waitForStatus, withSessionProject, type SessionProject } from '../../support/sessions.js';
import { dashFetch, signInHttp, withPassword } from '../../dashboard/support.js';

/**
 * Previews on their own origin and the proxy on the dashboard's origin:
 * the headers, the same-origin rule for the cookie, what reaches the sandbox, the cookie's
 * binding to (session, port). The browser's view is test/dashboard/previews.e2e.spec.ts.
 */
describe('previews: own origin, proxy headers, same-origin cookie', function () {
  this.timeout(120_000);
  let app: PreviewApp | undefined;
  afterEach(async () => {
    await app?.close();
    app = undefined;
  });

  const running = async (p: SessionProject) => {
    const s = (await p.api.post(p.sessions, {})).body.session;
    return waitForStatus(p.api, `${p.sessions}/${s.session_id}`, ['running']);
  };
  const portOf = (url: string) => new URL(url).port;

  it('the agent and old preview paths answer sandboxed, without CORS or cookies; the sandbox sees no credential or Referer', () =>
    withSessionProject({ slug: 'pvh' }, async (p) => {
      app = await startPreviewApp((_req, res) => {
        res.writeHead(200, {
          'content-type': 'text/html', 'access-control-allow-origin': '*', 'access-control-allow-credentials': 'true',
          'set-cookie': ['evil=1; Path=/', 'svc_session=forged; Path=/'], 'content-security-policy': "default-src *",
        });
        res.end('<script>parent.postMessage(document.cookie, "*")</script>');
        return true;
      });
      const s = await running(p);
      const live = `${p.sessions}/${s.session_id}`;
      const api = client(p.srv.url, p.srv.token);
      await agentReady(p.api, `${live}/agent/fake/hello`);
      for (const path of [`${live}/agent/fake/echo`, `${live}/preview/${app.port}/page`]) {
        const r = await api.call('GET', path, undefined, { origin: 'http://evil.example', cookie: 'svc_session=x; other=1', referer: 'http://127.0.0.1/projects/secret', 'x-svc-trace': 'x', 'x-api-key': p.srv.token });
        expect(r.status, path).to.equal(200);
        expect(r.headers.get('content-security-policy'), path).to.equal('sandbox');
        expect(r.headers.get('x-content-type-options'), path).to.equal('nosniff');
        expect(r.headers.get('referrer-policy'), path).to.equal('no-referrer');
        expect(r.headers.get('set-cookie'), path).to.equal(null);
        expect([...r.headers.keys()].filter((k) => k.startsWith('access-control-')), path).to.deep.equal([]);
      }
      const seen = app.seen.at(-1)!;
      expect(seen.headers).to.not.have.any.keys('cookie', 'authorization', 'referer', 'x-svc-trace', 'x-api-key');
      // The runtime saw none either.
      const echo = (await api.call('GET', `${live}/agent/fake/echo`, undefined, { cookie: 'svc_session=x', referer: 'http://127.0.0.1/x', 'x-svc-trace': 'x', 'x-api-key': p.srv.token })).body;
      expect(echo.headers).to.not.have.any.keys('cookie', 'authorization', 'referer', 'x-svc-trace', 'x-api-key');
    }));

  it('the dashboard cookie opens the proxy only from the same origin', () =>
    withSessionProject({ slug: 'pvs' }, async (p) => {
      const s = await running(p);
      await withPassword(p.srv);
      const cookie = await signInHttp(p.srv.url);
      await agentReady(p.api, `${p.sessions}/${s.session_id}/agent/fake/hello`);
      const url = `${p.srv.url}${p.sessions}/${s.session_id}/agent/fake/hello`;
      const get = (headers: Record<string, string>) => fetch(url, { headers: { cookie, ...headers } }).then((r) => r.status);
      expect(await get({ 'sec-fetch-site': 'same-origin' })).to.equal(200);
      expect(await get({ origin: p.srv.url })).to.equal(200); // a browser without fetch metadata
      expect(await get({ 'sec-fetch-site': 'same-site' })).to.equal(401);
      expect(await get({ 'sec-fetch-site': 'cross-site', origin: 'http://p3000-x.localhost' })).to.equal(401);
      expect(await get({ origin: 'http://evil.example' })).to.equal(401);
      expect(await get({})).to.equal(401);
    }));

  it('on the API origin no sandbox bytes run: the agent passes JSON only, the preview proxy takes a Bearer header only', () =>
    withSessionProject({ slug: 'pvb' }, async (p) => {
      const s = await running(p);
      await withPassword(p.srv);
      const cookie = await signInHttp(p.srv.url);
      const live = `${p.srv.url}${p.sessions}/${s.session_id}`;
      const env = (await agentReady(p.api, `${p.sessions}/${s.session_id}/agent/fake/state`)).body.env as Record<string, string>;
      // The runtime serving HTML with a script: refused, its body never sent, even with a token.
      const page = await fetch(`${live}/agent/fake/page`, { headers: { authorization: `Bearer ${p.srv.token}` } });
      expect(page.status).to.equal(406);
      expect(page.headers.get('content-type')).to.match(/^application\/json/);
      expect(await page.text()).to.not.contain('<script');
      // JSON and event streams pass (what the CLI and the session page's chat read).
      expect((await fetch(`${live}/agent/fake/hello`, { headers: { cookie, 'sec-fetch-site': 'same-origin' } })).status).to.equal(200);
      const sse = await fetch(`${live}/agent/event?count=1&interval=1`, { headers: { cookie, 'sec-fetch-site': 'same-origin' } });
      expect([sse.status, sse.headers.get('content-type')]).to.deep.equal([200, 'text/event-stream']);
      await sse.text();
      // The preview proxy: the dashboard's cookie, same origin or not, and a token in the query open nothing.
      const preview = `${live}/preview/${env.SVC_AGENT_PORT}/fake/hello`;
      expect((await fetch(preview, { headers: { cookie, 'sec-fetch-site': 'same-origin' } })).status).to.equal(401);
      expect((await fetch(`${preview}?access_token=${p.srv.token}`, { headers: { 'sec-fetch-site': 'same-origin' } })).status).to.equal(401);
      expect((await fetch(preview, { headers: { authorization: `Bearer ${p.srv.token}` } })).status).to.equal(200);
    }));

  it('a preview host: a one-time code, a cookie bound to (session, port), Domain stripped, framed by the dashboard only, never the API', () =>
    withSessionProject({ slug: 'pvo' }, async (p) => {
      app = await startPreviewApp((req, res) => {
        if (!req.url?.startsWith('/cookies')) return false;
        res.writeHead(200, { 'content-type': 'text/plain', 'set-cookie': ['a=1; Domain=localhost; Path=/', 'b=2; path=/; domain=.127.0.0.1; HttpOnly', '__Host-svc_preview=forged; Path=/; Secure'] });
        res.end('ok');
        return true;
      });
      const [a, b] = [await running(p), await running(p)];
      await withPassword(p.srv);
      const dash = await signInHttp(p.srv.url);
      const port = portOf(p.srv.url);
      const hostOf = (sid: string, pt: number) => `p${pt}-${sid}.localhost:${port}`;
      const entry = `/projects/${a.project_id}/sessions/${a.session_id}/preview/${app.port}`;

      // The dashboard sends the browser to the preview's origin with a one-time code.
      const go = await dashFetch(p.srv.url, dash, `${entry}?path=${encodeURIComponent('/cookies?x=1')}`);
      expect(go.status).to.equal(303);
      const to = new URL(go.location!);
      expect(to.host).to.equal(hostOf(a.session_id, app.port));
      const redeemed = await hostRequest(p.srv.url, to.host, `${to.pathname}${to.search}`);
      expect(redeemed.status).to.equal(303);
      expect(redeemed.headers.location).to.equal('/cookies?x=1');
      const set = redeemed.headers['set-cookie']![0]!;
      expect(set).to.match(/^__Host-svc_preview=[^;]+; Path=\/; Max-Age=\d+; HttpOnly; Secure; SameSite=None; Partitioned$/);
      const mine = set.split(';')[0]!;
      // Once only.
      expect((await hostRequest(p.srv.url, to.host, `${to.pathname}${to.search}`)).status).to.equal(400);
      // A path elsewhere is refused at the entry.
      expect((await dashFetch(p.srv.url, dash, `${entry}?path=${encodeURIComponent('//evil.example/')}`, { accept: 'application/json' })).status).to.equal(400);

      const viaA = await hostRequest(p.srv.url, to.host, '/cookies?x=1', { cookie: `${mine}; app=kept`, authorization: `Bearer ${p.srv.token}`, referer: `${p.srv.url}/projects` });
      expect(viaA.status).to.equal(200);
      expect(viaA.headers['set-cookie']).to.deep.equal(['a=1; Path=/', 'b=2; path=/; HttpOnly']);
      expect(viaA.headers['content-security-policy']).to.equal(`frame-ancestors ${p.srv.url}`);
      const seen = app.seen.at(-1)!;
      expect(seen.headers.cookie).to.equal('app=kept');
      expect(seen.headers).to.not.have.any.keys('authorization', 'referer');

      // Preview A's cookie opens neither another session nor another port.
      expect((await hostRequest(p.srv.url, hostOf(b.session_id, app.port), '/x', { cookie: mine })).status).to.equal(401);
      expect((await hostRequest(p.srv.url, hostOf(a.session_id, app.port + 1), '/x', { cookie: mine })).status).to.equal(401);
      // A code for A is no code for B.
      const go2 = new URL((await dashFetch(p.srv.url, dash, entry)).location!);
      expect((await hostRequest(p.srv.url, hostOf(b.session_id, app.port), `${go2.pathname}${go2.search}`)).status).to.equal(400);
      // Without a cookie, a navigation goes to the dashboard; anything else is 401.
      const nav = await hostRequest(p.srv.url, hostOf(b.session_id, app.port), '/deep?q=1', { 'sec-fetch-mode': 'navigate' });
      expect(nav.status).to.equal(303);
      expect(nav.headers.location).to.equal(`${p.srv.url}/projects/${b.project_id}/sessions/${b.session_id}/preview/${app.port}?path=%2Fdeep%3Fq%3D1`);

      // A preview host never reaches the API or the dashboard, whatever the path.
      const apiThere = await hostRequest(p.srv.url, hostOf(a.session_id, app.port), '/v1/projects', { authorization: `Bearer ${p.srv.token}` });
      expect(apiThere.status).to.equal(401);
      expect(apiThere.body).to.not.include('projects"');
      expect((await hostRequest(p.srv.url, `anything.localhost:${port}`, '/v1/projects', { authorization: `Bearer ${p.srv.token}` })).status).to.equal(404);

      // Another account's user gets no code for this session.
      await p.srv.newUser('stranger@example.test');
      await withPassword(p.srv, 'stranger@example.test');
      const stranger = await signInHttp(p.srv.url, 'stranger@example.test');
      expect((await dashFetch(p.srv.url, stranger, entry, { accept: 'application/json' })).status).to.equal(404);

      // WebSockets on a preview host (live reload): the cookie, and the preview's own Origin.
      const env = (await agentReady(p.api, `${p.sessions}/${a.session_id}/agent/fake/state`)).body.env as Record<string, string>;
      const wsPort = Number(env.SVC_AGENT_PORT); // the runtime answers upgrades with an echo
      const wsGo = new URL((await dashFetch(p.srv.url, dash, `/projects/${a.project_id}/sessions/${a.session_id}/preview/${wsPort}`)).location!);
      const wsCookie = (await hostRequest(p.srv.url, wsGo.host, `${wsGo.pathname}${wsGo.search}`)).headers['set-cookie']![0]!.split(';')[0]!;
      const open = (headers: Record<string, string>) => new Promise<string | number>((resolve) => {
        const ws = new WebSocket(`ws://127.0.0.1:${port}/socket?access_token=${p.srv.token}`, { headers: { host: wsGo.host, ...headers } });
        ws.on('open', () => ws.send('ping'));
        ws.on('message', (m) => { ws.close(); resolve(m.toString()); });
        ws.on('unexpected-response', (_q, r) => resolve(r.statusCode ?? 0));
        ws.on('error', () => resolve(-1));
      });
      const echoed = await open({ cookie: `${wsCookie}; app=1`, origin: `http://${wsGo.host}` });
      expect(JSON.parse(String(echoed)).hello).to.equal('/socket'); // access_token removed on the way
      expect(await open({ origin: `http://${wsGo.host}` })).to.equal(401);
      expect(await open({ cookie: wsCookie, origin: p.srv.url })).to.equal(403);
      expect(await open({ cookie: mine, origin: `http://${wsGo.host}` })).to.equal(401); // port A's cookie, another port

      // The API names the origin (svc sessions preview).
      const named = await p.api.get(`${p.sessions}/${a.session_id}/preview-url?port=${app.port}`);
      expect(named.body.url).to.equal(`http://${hostOf(a.session_id, app.port)}/`);
      expect((await p.api.get(`${p.sessions}/${a.session_id}/preview-url?port=0`)).status).to.equal(400);
    }));
});
