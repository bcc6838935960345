import { expect } from 'chai';
import type { Express } from 'express';
import { registeredRoutePatterns } from '../../../api/metrics.js';
import { client, gatewayUrl } from '../../support/http.js';
import { freePort, startTestServer } from '../../support/server.js';
import { agentReady, waitForStatus, withSessionProject } from '../../support/sessions.js';
import { fixtureRepo } from '../../support/repo.js';

/**
 * `/metrics` kept private: its labels name routes, and the route of a request is another
 * tenant's business (project ids, session ids, CR numbers). Not through a sandbox's
 * gateway, on the public listener only with SVC_METRICS_TOKEN, on SVC_METRICS_ADDR (a
 * listener of its own) without one; every `route` label a registered pattern.
 */
const TOKEN = 'metrics-token-0123456789abcdef0123456789abcdef';

const labelsOf = (text: string): string[] =>
  [...text.matchAll(/^svc_http_request_duration_seconds_count\{([^}]*)\}/gm)].map((m) => /route="([^"]*)"/.exec(m[1]!)?.[1] ?? '');

describe('hardening: metrics kept private', function () {
  this.timeout(120_000);

  it('/metrics on the public listener answers 401 without SVC_METRICS_TOKEN as Bearer (set or not), and the metrics listener serves them', async () => {
    const port = await freePort();
    const srv = await startTestServer({ env: { SVC_METRICS_TOKEN: TOKEN, SVC_METRICS_ADDR: `127.0.0.1:${port}` } });
    try {
      const anon = await client(srv.url, '').get('/metrics');
      expect(anon.status).to.equal(401);
      expect(JSON.stringify(anon.body)).to.not.include('svc_http_request_duration_seconds');
      // A user's own token is not the metrics token.
      expect((await client(srv.url, srv.token).get('/metrics')).status).to.equal(401);
      expect((await client(srv.url, `${TOKEN}x`).get('/metrics')).status).to.equal(401);
      const ok = await client(srv.url, TOKEN).get('/metrics');
      expect(ok.status).to.equal(200);
      expect(String(ok.body)).to.include('svc_http_request_duration_seconds');
      const own = await fetch(`http://127.0.0.1:${port}/metrics`);
      expect(own.status).to.equal(200);
      expect(await own.text()).to.include('svc_http_request_duration_seconds');
      expect((await fetch(`http://127.0.0.1:${port}/v1/projects`)).status).to.equal(404);
    } finally {
      await srv.stop();
    }
    const bare = await startTestServer();
    try {
      expect((await client(bare.url, '').get('/metrics')).status).to.equal(401);
      expect((await client(bare.url, TOKEN).get('/metrics')).status).to.equal(401);
    } finally {
      await bare.stop();
    }
  });

  it("/metrics through a sandbox's gateway answers 404, with the sandbox's key or the metrics token", () =>
    withSessionProject({ slug: 'metrics', env: { SVC_METRICS_TOKEN: TOKEN } }, async (p) => {
      const created = await p.api.post(`${p.sessions}`, {});
      expect(created.status, JSON.stringify(created.body)).to.equal(201);
      const one = `${p.sessions}/${created.body.session.session_id as string}`;
      const s = await waitForStatus(p.api, one, ['running', 'failed'], 60_000);
      expect(s.status, JSON.stringify(s.error)).to.equal('running');
      const state = await agentReady(p.api, `${one}/agent/fake/state`);
      const gw = gatewayUrl(p.srv.dataDir, s.sandbox.sandbox_id as string);
      for (const cred of ['', state.body.env.SVC_TOKEN as string, state.body.env.SVC_CLI_TOKEN as string, TOKEN]) {
        const r = await client(gw, cred).get('/metrics');
        expect(r.status, cred.slice(0, 8)).to.equal(404);
        expect(JSON.stringify(r.body)).to.not.include('svc_http_request_duration_seconds');
      }
      // The same token on the public listener does read them: the gateway is what refuses.
      expect((await client(p.srv.url, TOKEN).get('/metrics')).status).to.equal(200);
    }));

  it('every route label of /metrics is a registered route pattern or unmatched, never an id', async () => {
    const port = await freePort();
    const srv = await startTestServer({ env: { SVC_METRICS_ADDR: `127.0.0.1:${port}` } });
    const repo = await fixtureRepo();
    try {
      const api = client(srv.url, srv.token);
      const made = await api.post('/v1/projects', { name: 'Labels', slug: 'labels', repo_url: repo.url });
      expect(made.status).to.equal(201);
      const pid = made.body.project.project_id as string;
      const other = await srv.newUser('other@example.test');
      // Routes with ids in their path: found, not found, refused, another tenant's.
      await api.get(`/v1/projects/${pid}`);
      await api.get('/v1/projects/labels/change-requests/4242');
      await api.get(`/v1/projects/${pid}/change-requests?state=open`);
      await api.get('/v1/projects/labels/sessions/00000000-0000-4000-8000-00000000beef');
      await client(srv.url, other.token).get(`/v1/projects/${pid}/change-requests/7`);
      await api.get(`/v1/projects/${pid}/no-such-thing/99`);
      await client(srv.url, '').get('/projects/labels/change-requests/5');
      const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      const labels = [...new Set(labelsOf(text))];
      const app = srv.httpServer.listeners('request').find((l) => 'router' in l) as unknown as Express;
      const patterns = registeredRoutePatterns(app);
      expect(patterns.size).to.be.greaterThan(20);
      expect(labels).to.include('/v1/projects/:projectId/change-requests/:crId');
      expect(labels).to.include('/v1/projects/:projectId');
      for (const label of labels) {
        expect(label === 'unmatched' || patterns.has(label), `route label ${label}`).to.equal(true);
        expect(label).to.not.include(pid);
        expect(label).to.not.match(/labels|4242|beef|\/7\b|\/99\b/);
      }
    } finally {
      await srv.stop();
      await repo.cleanup();
    }
  });
});
