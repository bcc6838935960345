import { expect } from 'chai';
import { buildOpenApi } from '../../../api/openapi.js';
import { EXEMPT, exemptWhy, responseProblems } from '../../support/response-contract.js';

/** The check every integration test's responses go through (test/support/response-contract.ts), and the document's exactness. */

const ME = {
  user: { user_id: 'd44a934f-f690-410a-ae78-62825eb4506d', email: 'ada@example.com', name: 'Ada' },
  account: { account_id: '9c652c87-0e2f-453c-92c9-57f80495afb5', name: 'Ada', role: 'owner' },
  accounts: [{ account_id: '9c652c87-0e2f-453c-92c9-57f80495afb5', name: 'Ada', role: 'owner' }],
  token_id: '484cf716-a711-412d-999a-9137bf876c18',
};
const json = 'application/json; charset=utf-8';
const me = (body: unknown, status = 200) => responseProblems({ method: 'GET', url: '/v1/accounts/me?x=1', status, contentType: json, body: JSON.stringify(body) });

type Schema = Record<string, unknown>;
/** Every object schema of a response in the document, with where it is. */
function objectSchemas(s: unknown, at: string, out: Array<{ at: string; schema: Schema }>): void {
  if (!s || typeof s !== 'object') return;
  if (Array.isArray(s)) return s.forEach((x, i) => objectSchemas(x, `${at}[${i}]`, out));
  const o = s as Schema;
  if (o.type === 'object') out.push({ at, schema: o });
  for (const [k, v] of Object.entries(o)) objectSchemas(v, `${at}.${k}`, out);
}

describe('responses against the OpenAPI document', () => {
  it('accepts the real shape of /accounts/me and refuses an extra, a missing or a retyped field', () => {
    expect(me(ME)).to.deep.equal([]);
    expect(me({ ...ME, extra: 1 }).join()).to.match(/unexpected property 'extra'/);
    const { token_id: _t, ...noToken } = ME;
    expect(me(noToken).join()).to.match(/missing required 'token_id'/);
    expect(me({ ...ME, user: { ...ME.user, user_id: 42 } }).join()).to.match(/user_id: expected string/);
    expect(me({ ...ME, accounts: [{ account_id: ME.account.account_id, name: 'Ada' }] }).join()).to.match(/missing required 'role'/);
  });

  it('refuses a status the operation does not declare, and a documented route that answers something other than JSON', () => {
    expect(me({ error: 'x', message: 'y' }, 418).join()).to.match(/status 418 is not declared/);
    expect(responseProblems({ method: 'GET', url: '/v1/projects', status: 200, contentType: 'text/html', body: '<p>hi</p>' }).join()).to.match(/not JSON/);
    // An error status carries the error body, exactly.
    expect(me({ error: 'Forbidden', message: 'no' }, 403)).to.deep.equal([]);
    expect(me({ error: 'Forbidden' }, 403).join()).to.match(/missing required 'message'/);
    expect(me({ error: 'Forbidden', message: 'no', secret: 'x' }, 403).join()).to.match(/unexpected property 'secret'/);
  });

  it('a method or path the API does not have must get a 4xx with the error body; a 2xx there is an undocumented route', () => {
    const body = JSON.stringify({ error: 'Not found', message: 'No route for GET /v1/nope.' });
    expect(responseProblems({ method: 'GET', url: '/v1/nope', status: 404, contentType: json, body })).to.deep.equal([]);
    expect(responseProblems({ method: 'PUT', url: '/v1/projects/p/change-requests', status: 401, contentType: json, body })).to.deep.equal([]);
    expect(responseProblems({ method: 'GET', url: '/v1/nope', status: 404, contentType: json, body: '{"error":"Not found"}' }).join()).to.match(/not the contract's error body/);
    expect(responseProblems({ method: 'GET', url: '/v1/secret-route', status: 200, contentType: json, body: '{}' }).join()).to.match(/no such operation/);
  });

  it('leaves out only what EXEMPT lists, each with why: streams, smart HTTP, proxies, the model gateway, the dashboard', () => {
    for (const e of EXEMPT) expect(e.why, String(e.path)).to.have.length.above(10);
    const exempt = (method: string, path: string) => exemptWhy(method, path) !== null;
    expect(exempt('POST', '/git/demo.git/git-upload-pack')).to.equal(true);
    expect(exempt('GET', '/v1/projects/p/sessions/s/agent/event')).to.equal(true);
    expect(exempt('GET', '/v1/projects/p/sessions/s/preview/3000/')).to.equal(true);
    expect(exempt('POST', '/v1/llm/chat/completions')).to.equal(true);
    expect(exempt('GET', '/projects/demo')).to.equal(true);
    expect(exempt('OPTIONS', '/v1/projects')).to.equal(true);
    // ... and nothing of the API: the sessions routes beside the proxies, health, the llm-like prefix of another word.
    expect(exempt('GET', '/v1/projects/p/sessions/s')).to.equal(false);
    expect(exempt('GET', '/v1/projects/p/sessions/s/events')).to.equal(false);
    expect(exempt('GET', '/v1/llmx')).to.equal(false);
    expect(exempt('GET', '/healthz')).to.equal(false);
    expect(exempt('GET', '/v1/accounts/me')).to.equal(false);
    // Smart HTTP's own refusals are the server's: a JSON error there is the contract's error body.
    const git = (status: number, body: unknown) => responseProblems({ method: 'POST', url: '/git/demo.git/git-receive-pack', status, contentType: json, body: JSON.stringify(body) });
    expect(git(200, { anything: true })).to.deep.equal([]);
    expect(git(403, { error: 'Forbidden', message: 'no' })).to.deep.equal([]);
    expect(git(403, { error: 'Forbidden' }).join()).to.match(/not the contract's error body/);
  });

  it('every response object in the document is exact (additionalProperties: false), except free-form maps (metadata, event data)', () => {
    const doc = buildOpenApi() as { paths: Record<string, Record<string, { responses: Record<string, { content?: { 'application/json': { schema: Schema } } }> }>> };
    const found: Array<{ at: string; schema: Schema }> = [];
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(item)) {
        for (const [status, r] of Object.entries(op.responses)) objectSchemas(r.content?.['application/json'].schema, `${method.toUpperCase()} ${path} ${status}`, found);
      }
    }
    expect(found.length).to.be.above(100);
    const open = found.filter(({ schema }) => schema.additionalProperties !== false && !(schema.properties === undefined && typeof schema.additionalProperties === 'object'));
    expect(open.map((o) => o.at)).to.deep.equal([]);
    // A map is allowed only where the data is free-form by design.
    const maps = new Set(found.filter(({ schema }) => schema.properties === undefined).map(({ at }) => at.replace(/^.* \d{3}/, '').replace(/\[\d+\]/g, '[]')));
    for (const m of maps) expect(m, m).to.match(/\.(metadata|data|env|set)$|properties\.(metadata|data|env)$/);
  });
});
