import { expect } from 'chai';
import WebSocket from 'ws';
import { client, gatewayUrl } from '../../support/http.js';
import { agentReady, waitForStatus, withSessionProject } from '../../support/sessions.js';

describe('sessions: auth matrix and the sandbox proxy (HTTP, SSE, WebSocket, preview)', function () {
  this.timeout(90_000);

  it('every session route answers each kind of credential as the spec says', () =>
    withSessionProject({ slug: 'authm' }, async ({ srv, repo, api, sessions }) => {
      const other = await api.post('/v1/projects', { name: 'other', slug: 'authm-other', repo_url: repo.url });
      const projectId = (await api.get('/v1/projects/authm')).body.project.project_id;
      const thisProjectToken = (await api.post('/v1/projects/authm/cli-token')).body.token;
      const otherProjectToken = (await api.post(`/v1/projects/${other.body.project.project_id}/cli-token`)).body.token;
      const stranger = await srv.newUser('stranger@example.test');
      const s = (await api.post(sessions, {})).body.session;
      const running = await waitForStatus(api, `${sessions}/${s.session_id}`, ['running']);
      const gw = gatewayUrl(srv.dataDir, running.sandbox.sandbox_id);
      const env = (await agentReady(api, `${sessions}/${s.session_id}/agent/fake/state`)).body.env as Record<string, string>;
      const svcToken = env.SVC_TOKEN!;

      const live = `${sessions}/${s.session_id}`;
      const ghost = `${sessions}/00000000-0000-4000-8000-000000000000`;
      const routes: [string, string, unknown?][] = [
        ['GET', sessions],
        ['POST', sessions, { base_ref: 'no/such/branch' }],
        ['GET', live],
        ['GET', `${live}/events`],
        ['GET', `${live}/agent/fake/hello`],
        ['GET', `${live}/preview/${env.SVC_AGENT_PORT}/fake/hello`],
        ['POST', `${ghost}/stop`, {}],
        ['POST', `${ghost}/restart`, {}],
        ['POST', `${ghost}/prompt`, { text: 'x' }],
        ['POST', `${ghost}/abort`, {}],
        ['DELETE', ghost],
      ];
      const who: [string, string | undefined, number[]][] = [
        ['user token', srv.token, []],
        ['project token of this project', thisProjectToken, []],
        ['project token of another project', otherProjectToken, [403]],
        ['SVC_TOKEN', svcToken, [401]],
        ['no token', undefined, [401]],
        ['user of another account', stranger.token, [403, 404]],
      ];
      for (const [name, token, refused] of who) {
        for (const [method, path, body] of routes) {
          const r = await client(srv.url, token).call(method, path, body);
          if (refused.length) {
            expect(refused, `${name}: ${method} ${path} -> ${r.status}`).to.include(r.status);
            expect(r.body.error, `${name}: ${method} ${path}`).to.be.a('string');
          } else {
            expect([401, 403], `${name}: ${method} ${path} -> ${r.status} ${JSON.stringify(r.body)}`).to.not.include(r.status);
          }
        }
      }

      // A session of this project is unknown under another project of the same account.
      const foreign = `/v1/projects/authm-other/sessions/${s.session_id}`;
      for (const [method, path, body] of [['GET', foreign], ['GET', `${foreign}/events`], ['POST', `${foreign}/stop`, {}], ['POST', `${foreign}/restart`, {}], ['POST', `${foreign}/prompt`, { text: 'x' }], ['DELETE', foreign], ['GET', `${foreign}/agent/fake/hello`]] as [string, string, unknown?][]) {
        expect((await api.call(method, path, body)).status, `${method} ${path}`).to.equal(404);
      }
      expect((await api.get(live)).body.session.status).to.equal('running');

      // The clone credential: only a live SVC_TOKEN of that very project, through its sandbox's gateway.
      const cred = (token?: string, project = projectId, base = gw) => client(base, token).get(`/v1/projects/${project}/git/clone-credential`);
      expect((await cred(svcToken, projectId, srv.url)).status, 'on the public listener').to.equal(401);
      expect((await cred(svcToken)).status).to.equal(200);
      expect((await cred(svcToken, 'authm')).status).to.equal(200);
      expect((await cred(svcToken, other.body.project.project_id)).status).to.equal(401);
      for (const token of [srv.token, thisProjectToken, otherProjectToken, stranger.token, undefined, 'svc_sbx_' + 'x'.repeat(43)]) {
        const r = await cred(token);
        expect(r.status).to.equal(401);
        expect(r.body).to.include({ error: 'Unauthorized' });
      }
      // The credential it gives is a project token of this project, which expires.
      const minted = (await cred(svcToken)).body.password;
      expect((await client(gw, minted).get(`/v1/projects/${projectId}`)).status).to.equal(200);
      expect((await client(gw, minted).get(`/v1/projects/${other.body.project.project_id}`)).status).to.equal(403);
      expect((await client(srv.url, minted).get(`/v1/projects/${projectId}`)).status, 'a clone credential on the public listener').to.equal(401);
      const row = await srv.db.db.one<{ name: string; expires_at: Date }>({ text: "SELECT name, expires_at FROM tokens WHERE name = 'clone-credential' ORDER BY created_at DESC LIMIT 1", values: [] });
      expect(row!.expires_at.getTime() - Date.now()).to.be.within(14 * 60_000, 15 * 60_000 + 5000);
    }));

  it('the proxy passes SSE and WebSocket, binds previews to their port, and never forwards the caller\'s token', () =>
    withSessionProject({ slug: 'proxy' }, async ({ srv, api, sessions }) => {
      const s = (await api.post(sessions, {})).body.session;
      const live = `${sessions}/${s.session_id}`;
      await waitForStatus(api, live, ['running']);
      const env = (await agentReady(api, `${live}/agent/fake/state`)).body.env as Record<string, string>;

      // HTTP with a body, both ways.
      const echo = await client(srv.url, srv.token).call('POST', `${live}/agent/fake/echo?q=1&access_token=zzz`, { hello: 'world' });
      expect(echo.status).to.equal(200);
      expect(echo.body.method).to.equal('POST');
      expect(echo.body.url).to.equal('/fake/echo?q=1');
      expect(JSON.parse(echo.body.body)).to.deep.equal({ hello: 'world' });
      expect(echo.body.headers).to.not.have.property('authorization');

      // SSE streams: events arrive before the stream ends.
      const res = await fetch(`${srv.url}${live}/agent/event?count=3&interval=200`, { headers: { authorization: `Bearer ${srv.token}` } });
      expect(res.headers.get('content-type')).to.match(/text\/event-stream/);
      const reader = res.body!.getReader();
      const started = Date.now();
      const first = await reader.read();
      const firstAt = Date.now() - started;
      let text = new TextDecoder().decode(first.value);
      for (;;) {
        const c = await reader.read();
        if (c.done) break;
        text += new TextDecoder().decode(c.value);
      }
      const total = Date.now() - started;
      expect(text.match(/^data:/gm)?.length ?? 0).to.be.at.least(3);
      expect(firstAt, 'first event streamed before the end').to.be.lessThan(total);

      // WebSocket through the agent route (token in the query, as a browser must).
      const wsUrl = `${srv.url.replace('http', 'ws')}${live}/agent/socket?access_token=${srv.token}`;
      const ws = new WebSocket(wsUrl);
      const messages: string[] = [];
      const reply = await new Promise<string>((resolve, reject) => {
        ws.on('open', () => ws.send('ping-1'));
        ws.on('message', (m) => {
          messages.push(m.toString());
          if (m.toString().includes('ping-1')) resolve(m.toString());
        });
        ws.on('error', reject);
        setTimeout(() => reject(new Error('no WebSocket reply')), 10_000);
      });
      ws.close();
      expect(reply).to.include('ping-1');
      // The runtime saw the path without the caller's token.
      expect(JSON.parse(messages[0]!).hello).to.equal('/socket');
      // Without a token the upgrade is refused with the contract's body.
      const refused = await new Promise<number>((resolve) => {
        const bad = new WebSocket(`${srv.url.replace('http', 'ws')}${live}/agent/socket`);
        bad.on('unexpected-response', (_req, r) => resolve(r.statusCode ?? 0));
        bad.on('error', () => resolve(-1));
      });
      expect(refused).to.equal(401);

      // A preview reaches a port inside the sandbox (here the runtime's own port).
      const preview = await api.get(`${live}/preview/${env.SVC_AGENT_PORT}/fake/echo`);
      expect(preview.status).to.equal(200);
      expect(preview.body.url).to.equal('/fake/echo');
      // The daemon's own port is refused by the daemon.
      const daemonPort = (await srv.db.db.one<{ url: string }>({ text: 'SELECT url FROM session_sandboxes WHERE session_id = $1', values: [s.session_id] }))!.url.split(':').pop();
      expect((await api.get(`${live}/preview/${daemonPort}/svc/health`)).status).to.equal(403);
    }));
});
