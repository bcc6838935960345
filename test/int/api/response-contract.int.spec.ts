import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { client } from '../../support/http.js';
import { takeViolations, watchResponses } from '../../support/response-contract.js';

/**
 * The watcher every in-process test server runs (test/support/server.ts): a server whose
 * response drifts from the OpenAPI document is caught whoever sent the request, and the
 * root afterEach hook would fail the test with it (here the test takes the problems itself).
 */
describe('every response of a watched test server is checked against the OpenAPI document', () => {
  let server: http.Server;
  let base: string;
  const answers: Record<string, { status: number; type: string; body: string }> = {
    '/v1/accounts/me': { status: 200, type: 'application/json; charset=utf-8', body: JSON.stringify({ user: { user_id: 'x' }, accounts: [] }) },
    '/healthz': { status: 200, type: 'application/json', body: '{"status":"ok"}' },
    '/git/demo.git/info/refs': { status: 200, type: 'application/json', body: '{"not":"checked"}' },
  };
  before(async () => {
    server = http.createServer((req, res) => {
      const a = answers[(req.url ?? '').replace(/\?.*$/, '')] ?? { status: 200, type: 'application/json', body: '{"surprise":true}' };
      res.writeHead(a.status, { 'content-type': a.type });
      // Written in two pieces: the watcher must see the whole body.
      res.write(a.body.slice(0, 5));
      res.end(a.body.slice(5));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    watchResponses(server);
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(async () => {
    await new Promise<void>((r) => server.close(() => r()));
  });

  it('a drifted body from raw fetch is a violation naming the operation and the field; a conforming one is not', async () => {
    await (await fetch(`${base}/v1/accounts/me`)).text();
    await (await fetch(`${base}/healthz`)).text();
    const problems = takeViolations();
    expect(problems.join('\n')).to.match(/GET \/v1\/accounts\/me 200 reply \$: missing required 'token_id'/).and.match(/\$\.user: missing required 'email'/);
    expect(problems.join('\n')).not.to.contain('/healthz');
  });

  it('an undocumented route answering 200 is a violation; an exempt path (smart HTTP) is not looked at', async () => {
    await (await fetch(`${base}/v1/undocumented`)).text();
    await (await fetch(`${base}/git/demo.git/info/refs`)).text();
    const problems = takeViolations();
    expect(problems).to.have.length(1);
    expect(problems[0]).to.match(/GET \/v1\/undocumented 200: no such operation/);
  });

  it('client() leaves a watched server to the watcher (each problem once)', async () => {
    await client(base).get('/v1/accounts/me');
    const problems = takeViolations();
    expect(problems.filter((p) => p.includes("missing required 'token_id'"))).to.have.length(1);
    expect(problems.join()).not.to.match(/\(2 responses\)/);
  });
});
