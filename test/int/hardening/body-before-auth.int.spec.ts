import { expect } from 'chai';
import type { Socket } from 'node:net';
import { pushBody } from '../../support/raw-body.js';
import { client } from '../../support/http.js';
import { startTestServer, type TestServer } from '../../support/server.js';

/**
 * Nothing is read before the caller is known (api/body.ts): every door checks its
 * credential from the headers, and a refused request is answered without its body being
 * read (a large one's connection closed after the answer). The two doors whose credential
 * is the body (password sign-in, `svc login`) read at most 16 KiB; the API 1 MiB.
 */
const MB = 1024 * 1024;

describe('hardening: nothing is read before authentication', function () {
  this.timeout(120_000);
  let srv: TestServer;
  const sockets: Socket[] = [];
  before(async () => {
    srv = await startTestServer();
    srv.httpServer.on('connection', (s: Socket) => sockets.push(s));
  });
  after(() => srv?.stop());

  const port = () => Number(new URL(srv.url).port);
  /** Bytes the server read on the connection a push used (request head included). */
  const readOn = (before: number) => sockets.slice(before).reduce((n, s) => n + s.bytesRead, 0);

  it('30 MB bodies without a valid credential, 10 at once, are answered without being read: the server takes under 1 MiB of each', async () => {
    const bad = 'Bearer svc_pat_' + 'A'.repeat(43);
    const doors: { method: string; path: string; headers: Record<string, string>; chunked?: boolean; status: number[] }[] = [
      { method: 'POST', path: '/v1/llm/chat/completions', headers: { authorization: bad, 'content-type': 'application/json' }, status: [401] },
      { method: 'POST', path: '/v1/llm/chat/completions', headers: { authorization: bad, 'content-type': 'application/json' }, chunked: true, status: [401] },
      { method: 'POST', path: '/v1/projects', headers: { 'content-type': 'application/json' }, status: [401] },
      { method: 'POST', path: '/v1/projects/p/change-requests', headers: { authorization: bad, 'content-type': 'application/json' }, chunked: true, status: [401] },
      { method: 'PUT', path: '/v1/projects/p/sessions/00000000-0000-4000-8000-000000000001/wip', headers: { authorization: bad }, status: [401] },
      { method: 'POST', path: '/projects/p/secrets', headers: { 'content-type': 'application/x-www-form-urlencoded' }, status: [401] },
      { method: 'POST', path: '/v1/cli/login/token', headers: { 'content-type': 'application/json' }, status: [413] },
      { method: 'POST', path: '/login', headers: { 'content-type': 'application/x-www-form-urlencoded' }, chunked: true, status: [413] },
      { method: 'POST', path: '/git/p.git/git-receive-pack', headers: { authorization: 'Basic eDp5', 'content-type': 'application/x-git-receive-pack-request' }, status: [401, 404] },
      { method: 'POST', path: '/v1/projects/p/sessions/00000000-0000-4000-8000-000000000001/agent/x', headers: { authorization: bad, 'content-type': 'application/json' }, chunked: true, status: [401] },
    ];
    const first = sockets.length;
    const rssBefore = process.memoryUsage().rss;
    const results = await Promise.all(doors.map((d) => pushBody({ port: port() }, { ...d, bytes: 30 * MB })));
    const grew = process.memoryUsage().rss - rssBefore;
    expect(sockets.length - first).to.equal(doors.length);
    results.forEach((r, i) => {
      const d = doors[i]!;
      expect(d.status, `${d.method} ${d.path}${d.chunked ? ' (chunked)' : ''}: ${r.response.slice(0, 200)}`).to.include(r.status);
      expect(r.response, `${d.path}`).to.match(/\r\nconnection: close\r\n/i);
      expect(r.accepted, `${d.path}: the client could not send it all`).to.be.lessThan(30 * MB);
    });
    for (const s of sockets.slice(first)) expect(s.bytesRead, 'bytes the server read on one connection').to.be.lessThan(MB);
    expect(readOn(first)).to.be.lessThan(doors.length * MB);
    expect(grew, 'RSS growth').to.be.lessThan(64 * MB);
  });

  it('invalid JSON with a bad key answers 401 (the key first), not 400; with a good token the body is read and refused (400)', async () => {
    const bad = client(srv.url, 'svc_pat_' + 'B'.repeat(43));
    const llm = await bad.call('POST', '/v1/llm/chat/completions', '{not json');
    expect(llm.status).to.equal(401);
    expect(JSON.stringify(llm.body)).to.not.include('invalid_json');
    expect((await bad.call('POST', '/v1/projects', '{not json')).status).to.equal(401);
    expect((await client(srv.url).call('POST', '/v1/accounts/tokens', '{not json')).status).to.equal(401);
    const good = await client(srv.url, srv.token).call('POST', '/v1/projects', '{not json');
    expect(good.status).to.equal(400);
    expect(good.body.error).to.equal('Invalid JSON');
  });

  it('the credential doors (svc login, password sign-in) read at most 16 KiB; the API reads 1 MiB after the token, refusing a larger declared body unread', async () => {
    const login = await client(srv.url).call('POST', '/v1/cli/login/token', JSON.stringify({ state: 'x'.repeat(17 * 1024) }));
    expect(login.status).to.equal(413);
    expect(login.body.message).to.include('16 KiB');
    const small = await client(srv.url).call('POST', '/v1/cli/login/token', JSON.stringify({ state: 'x' }));
    expect(small.status).to.equal(400); // read, then refused on its content
    const form = await fetch(`${srv.url}/login`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' }, body: `email=${'x'.repeat(17 * 1024)}` });
    expect(form.status).to.equal(413);
    const big = JSON.stringify({ name: 'x'.repeat(MB + 10), slug: 'big' });
    const over = await client(srv.url, srv.token).call('POST', '/v1/projects', big);
    expect(over.status).to.equal(413);
    expect(over.body.message).to.include('1 MiB');
    // Declared over the limit: refused at its headers, the connection closed under it.
    const first = sockets.length;
    const pushed = await pushBody({ port: port() }, { method: 'POST', path: '/v1/projects', headers: { authorization: `Bearer ${srv.token}`, 'content-type': 'application/json' }, bytes: 20 * MB });
    expect(pushed.status).to.equal(413);
    expect(readOn(first)).to.be.lessThan(MB);
    // Under the limit with a token: read and served.
    const ok = await client(srv.url, srv.token).post('/v1/projects', { name: 'Fits', slug: 'fits', description: 'y'.repeat(2000) });
    expect(ok.status, JSON.stringify(ok.body)).to.be.oneOf([201, 400]);
  });
});
