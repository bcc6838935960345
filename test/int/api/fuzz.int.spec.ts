import { expect } from 'chai';
import http from 'node:http';
import { serverAndRepo } from '../../support/suite.js';
import { client } from '../../support/http.js';

/**
 * Malformed requests against the real server, across every route: the server must answer
 * each with a 4xx and the contract's error body (or a success), never a 5xx, never hang,
 * and never touch a ref of the repository behind the project.
 *
 * Deterministic: the whole request list comes from a seeded PRNG. Reproduce a run with
 * SVC_FUZZ_SEED=<seed> (printed); SVC_FUZZ_COUNT changes the number of requests.
 */
const SEED = Number(process.env.SVC_FUZZ_SEED ?? 0x5eed_2024) >>> 0;
const COUNT = Number(process.env.SVC_FUZZ_COUNT ?? 1500);
const PARALLEL = 6;

/** mulberry32: small, fast, good enough to pick cases. */
function prng(seed: number) {
  let a = seed;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (n: number) => Math.floor(next() * n);
  const pick = <T>(xs: readonly T[]): T => xs[int(xs.length)]!;
  const chance = (p: number) => next() < p;
  return { next, int, pick, chance };
}
type Rng = ReturnType<typeof prng>;

const BAD_REFS = [
  '--upload-pack=x', '--upload-pack=touch /tmp/pwned', '-x', '-', '../', '..', 'a/../b', '../../etc/passwd', 'refs/heads/x',
  'refs/heads/main', '@{-1}', 'main@{1}', 'x.lock', 'a/b.lock', 'a\u0000b', '\u0000', 'a\nb', 'a\rb', 'a\tb', 'a b', ' ', '',
  'HEAD', '@', 'a..b', '/a', 'a/', 'a//b', '.a', 'a/.b', 'a.', '~1', 'main~1', 'main^', 'main^{tree}', 'a:b', 'a?b', 'a*b',
  'a[b', 'a\\b', '\u007f', 'FETCH_HEAD', 'origin/main', '$(touch /tmp/pwned)', '`id`', ';rm -rf /', '|cat', '\u202emain',
  'ä', '🙂', 'x'.repeat(256), 'x'.repeat(5000), 'main', 'feature', 'topic', 'nope', '%2e%2e', '\ud800',
];
const BAD_TIMES = [
  '', 'now', 'yesterday', '2024-13-01T00:00:00Z', '2024-02-30T00:00:00Z', '2024-01-01', '2024-01-01T25:00:00Z',
  '0', '-1', '1e309', 'NaN', 'Infinity', '9999999-01-01T00:00:00Z', '+275760-09-13T00:00:00.001Z', '1970-01-01T00:00:00',
  '2024-01-01T00:00:00+99:99', '2024-01-01T00:00:00.000000000000000000001Z', "' OR 1=1 --", '%00', '\u0000', 'x'.repeat(4000),
  '2000-01-01T00:00:00Z', '2999-01-01T00:00:00Z', '0000-01-01T00:00:00Z',
];
const BAD_STATUS = ['', 'OPEN', 'opened', 'merged ', 'all,open', 'null', '1', '[]', '{}', '%00', 'x'.repeat(3000), 'open\u0000'];
const CONTENT_TYPES = [
  'application/json', 'application/json; charset=utf-8', 'text/plain', 'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x', 'application/json; charset=utf-16', 'application/json; charset=latin1',
  'application/json; charset=bogus', 'application/*', '*/*', 'application/json+weird', ';;;', 'application/merge-patch+json',
];

/** Random JSON of bounded size. */
function jsonValue(r: Rng, depth = 0): unknown {
  const k = r.int(depth > 3 ? 5 : 8);
  switch (k) {
    case 0: return null;
    case 1: return r.chance(0.5);
    case 2: return r.pick([0, -1, 1.5, 1e308, -1e308, 2 ** 53 + 1, 123456789012]);
    case 3: return r.pick(['', 'x', '\u0000', '\ud800', '\uffff', '🙂', '\n', 'a'.repeat(r.int(2000))]);
    case 4: return r.pick(BAD_REFS);
    case 5: return Array.from({ length: r.int(4) }, () => jsonValue(r, depth + 1));
    default: {
      const o: Record<string, unknown> = {};
      for (let i = r.int(4); i > 0; i--) o[r.pick(['title', 'head_ref', 'base_ref', 'description', 'message', '__proto__', 'constructor', 'x', ''])] = jsonValue(r, depth + 1);
      return o;
    }
  }
}

/** encodeURIComponent, except that a lone surrogate (which it refuses) goes out as `%ED%A0%80`. */
const pct = (v: string) =>
  encodeURIComponent(v.replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '\u0001LONE')).replace(/%01LONE/g, '%ED%A0%80');

const deep = (n: number, open: string, close: string, inner = '1') => open.repeat(n) + inner + close.repeat(n);

/** A field of a known body, with a wrong type or a hostile value. */
function fieldValue(r: Rng, field: string): unknown {
  if (r.chance(0.35)) return r.pick([null, 1, -1, true, [], {}, [field], { [field]: 'x' }, 1.5, '']);
  if (/ref|branch/.test(field)) return r.pick(BAD_REFS);
  if (field === 'expected_head_sha') return r.pick(['0'.repeat(40), 'A'.repeat(40), 'g'.repeat(40), '0'.repeat(39), '0'.repeat(64), 'HEAD', '--all']);
  if (field === 'metadata') return r.pick([{ a: 1 }, { ['k'.repeat(300)]: 1 }, { a: '\u0000' }, { '\u0000': 1 }, [], 'x', JSON.parse(deep(r.pick([10, 100, 1000, 3000]), '{"a":', '}'))]);
  if (field === 'slug') return r.pick(['UPPER', '-x', 'a'.repeat(64), 'ok-slug', 'ä', 'a b', '']);
  if (field === 'account_id') return r.pick(['not-a-uuid', '00000000-0000-0000-0000-000000000000', 'A0000000-0000-4000-8000-000000000000']);
  if (field === 'repo_url') return r.pick(['--upload-pack=x', 'ext::sh -c touch% /tmp/pwned', 'fd::17', 'file:///etc', '/abs/path', 'https://u:p@127.0.0.1/x', 'ssh://-oProxyCommand=x/y', 'git@host:-x', 'http://127.0.0.1\u0000x', 'x'.repeat(3000), 'javascript:alert(1)']);
  return r.pick(['', ' ', '\u0000', '\ud800', 'x'.repeat(r.pick([1, 200, 1025, 70_000])), '🙂'.repeat(100), '<script>', "'; DROP TABLE events; --"]);
}

interface FuzzRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: Buffer;
}

const FIELDS: Record<string, string[]> = {
  cr: ['title', 'description', 'head_ref', 'base_ref', 'session_id', 'metadata'],
  edit: ['title', 'description'],
  merge: ['message', 'expected_head_sha'],
  project: ['name', 'slug', 'repo_url', 'default_branch', 'account_id'],
  token: ['name'],
  none: [],
};

function body(r: Rng, kind: string): Buffer | undefined {
  const valid: Record<string, Record<string, unknown>> = {
    cr: { title: 'fuzz', head_ref: 'feature' },
    edit: { title: 'fuzz' },
    merge: {},
    project: { name: 'fuzz' },
    token: {},
    none: {},
  };
  switch (r.int(16)) {
    case 0: return undefined;
    case 1: return Buffer.from(JSON.stringify(jsonValue(r)));
    case 2: return Buffer.from(r.pick(['null', '0', '-1', '1e999', 'true', '"x"', '[]', '[{}]', '[1,2,3]', '""', '{}']));
    case 3: return Buffer.from(r.pick(['{', '{"a":}', '{"a" 1}', "{'a':1}", '{"a":1,}', 'undefined', 'NaN', '\ufeff{}', '{"title":"x"}{"title":"y"}', '{"a":"\\x"}', '{"a":"\\ud800"}', '{"title":"\\u0000"}']));
    case 4: return Buffer.concat([Buffer.from('{"title":"'), Buffer.from([0xff, 0xfe, 0xc0, 0x80, 0xed, 0xa0, 0x80]), Buffer.from('","head_ref":"feature"}')]);
    case 5: return Buffer.from(r.pick([deep(r.pick([100, 5000, 100_000]), '[', ']'), deep(r.pick([100, 5000, 50_000]), '{"a":', '}')]));
    case 6: {
      // Built as text: too deep for JSON.stringify.
      const fields = JSON.stringify(valid[kind]).slice(1, -1);
      return Buffer.from(`{${fields}${fields ? ',' : ''}"metadata":${deep(r.pick([64, 500, 2000, 20_000]), '{"a":', '}', 'null')}}`);
    }
    case 7: return Buffer.from(JSON.stringify({ title: 'x'.repeat(r.pick([1024, 1025, 70_000, 1_100_000])), head_ref: 'feature', description: 'y'.repeat(r.pick([0, 65_537])) }));
    case 8: return Buffer.from(JSON.stringify({ ...valid[kind], [r.pick(['surprise', '__proto__', 'constructor', 'cr_id', 'status', 'number'])]: r.pick([1, 'x', { polluted: true }]) }));
    default: {
      const b: Record<string, unknown> = { ...valid[kind] };
      for (const f of FIELDS[kind] ?? []) if (r.chance(0.5)) b[f] = fieldValue(r, f);
      return Buffer.from(JSON.stringify(b));
    }
  }
}

/** A path segment: a real one, or a hostile one (already in wire form). */
function segment(r: Rng, real: string[]): string {
  if (r.chance(0.6)) return r.pick(real);
  return r.pick([
    '%', '%zz', '%f', '%ff', '%c0%80', '%ed%a0%80', '%00', '%0a', '%2e%2e', '..', '.', '%2f', 'a%2f..%2fb', '%252e', '\xff\xfe', '\xe9',
    '-1', '0', '%231', '#1', '1.0', '1e3', '99999999999', '2147483648', '00000000-0000-0000-0000-000000000000',
    'AAAAAAAA-AAAA-AAAA-AAAA-AAAAAAAAAAAA', 'x'.repeat(5000), pct(r.pick(BAD_REFS)), pct('🙂'),
    '%20', '+', 'null', 'undefined', '__proto__', 'constructor',
  ]);
}

function query(r: Rng, which: 'status' | 'as_of' | 'after' | 'window' | 'any'): string {
  if (r.chance(0.3)) return '';
  const enc = (v: string) => (r.chance(0.8) ? pct(v) : v.replace(/[^\x21-\x7e]/g, (c) => pct(c)));
  const parts: string[] = [];
  if (which === 'status') parts.push(`status=${enc(r.pick([...BAD_STATUS, 'open', 'all']))}`);
  if (which === 'as_of') parts.push(`as_of=${enc(r.pick(BAD_TIMES))}`);
  if (which === 'window') for (const k of ['from', 'to', 'as_of']) if (r.chance(0.5)) parts.push(`${k}=${enc(r.pick(BAD_TIMES))}`);
  if (which === 'window' && r.chance(0.5)) parts.push(`group_by=${enc(r.pick(['model', 'week', 'person', 'colour', '', 'agent,model', '__proto__']))}`);
  if (which === 'after') parts.push(`after=${enc(r.pick(['', '-1', '0', '1', '1.5', '1e3', 'x', '99999999999999999999', '999999']))}`);
  if (r.chance(0.2)) parts.push(parts[0] ?? 'status=open'); // repeated key: an array
  if (r.chance(0.2)) parts.push(r.pick(['status[]=open', 'as_of[a]=1', '__proto__[x]=1', '%=%', '&&', '=x', 'a=%zz', 'access_token=svc_pat_x']));
  return `?${parts.join('&')}`;
}

function request(r: Rng, ids: { project: string; slug: string; token: string; account: string }): FuzzRequest {
  const p = segment(r, [ids.project, ids.slug]);
  const c = segment(r, ['1', '2', '#1'.replace('#', '%23')]);
  const crs = `/v1/projects/${p}/change-requests`;
  const routes: [string, string, string][] = [
    ['GET', '/healthz', 'none'], ['GET', '/readyz', 'none'], ['GET', '/metrics', 'none'], ['GET', '/v1/openapi.json', 'none'],
    ['GET', '/v1/projects', 'none'], ['POST', '/v1/projects', 'project'],
    ['GET', `/v1/projects/${p}`, 'none'], ['POST', `/v1/projects/${p}/cli-token`, 'none'],
    ['GET', '/v1/accounts/me', 'none'], ['POST', '/v1/accounts/tokens', 'token'],
    ['GET', `${crs}${query(r, 'status')}`, 'none'], ['POST', crs, 'cr'], ['POST', crs, 'cr'],
    ['GET', `${crs}/${c}${query(r, 'as_of')}`, 'none'], ['GET', `${crs}/${c}${query(r, 'as_of')}`, 'none'],
    ['PATCH', `${crs}/${c}`, 'edit'], ['GET', `${crs}/${c}/diff`, 'none'], ['GET', `${crs}/${c}/merge-preview`, 'none'],
    ['GET', `${crs}/${c}/events`, 'none'], ['POST', `${crs}/${c}/merge`, 'merge'], ['POST', `${crs}/${c}/merge`, 'merge'],
    ['POST', `${crs}/${c}/close`, 'none'], ['POST', `${crs}/${c}/reopen`, 'none'],
    ['GET', `/v1/projects/${p}/events${query(r, 'after')}`, 'none'],
    ['GET', `/v1/projects/${p}/insights${query(r, 'window')}`, 'none'], ['GET', `/v1/accounts/${segment(r, [ids.account])}/insights${query(r, 'window')}`, 'none'],
    [r.pick(['PUT', 'DELETE', 'OPTIONS', 'PATCH', 'POST']), r.pick([crs, `/v1/projects/${p}`, '/v1/accounts/me', '/healthz', `/v1/${segment(r, [])}`]), 'cr'],
  ];
  let [method, path, kind] = r.pick(routes);
  // DELETE of the real project is a route (it deletes the fuzz target): hostile segments only.
  if (method === 'DELETE' && (path === `/v1/projects/${ids.project}` || path === `/v1/projects/${ids.slug}`)) path = `${path}/x`;
  const headers: Record<string, string> = {};
  const auth = r.int(20);
  if (auth === 0) headers.authorization = r.pick(['Bearer', 'Bearer ', 'Basic dXNlcjpwYXNz', `Bearer svc_pat_${'A'.repeat(43)}`, 'Bearer svc_pat_\u00ff', `bearer ${ids.token}`, `Bearer ${ids.token} extra`, 'x'.repeat(8000)]);
  else if (auth !== 1) headers.authorization = `Bearer ${ids.token}`;
  const b = method === 'GET' && r.chance(0.9) ? undefined : body(r, kind);
  if (b !== undefined || r.chance(0.1)) headers['content-type'] = r.chance(0.7) ? 'application/json' : r.pick(CONTENT_TYPES);
  if (b !== undefined && r.chance(0.05)) headers['content-encoding'] = r.pick(['gzip', 'deflate', 'br', 'identity', 'x-unknown', 'gzip, gzip']);
  if (r.chance(0.03)) Object.assign(headers, { connection: 'Upgrade', upgrade: r.pick(['websocket', 'h2c', 'WebSocket']), 'sec-websocket-version': r.pick(['13', '8', '99']), 'sec-websocket-key': r.pick(['dGhlIHNhbXBsZSBub25jZQ==', 'short', '']) });
  // Framed explicitly: node:http sends a GET/DELETE/OPTIONS body unframed otherwise.
  if (b !== undefined) headers['content-length'] = String(b.length);
  return { method, path, headers, ...(b !== undefined ? { body: b } : {}) };
}

interface Outcome {
  status: number;
  body: string;
}

/** node:http, not fetch: it sends the path as given (raw bytes, `..`), without normalising it. */
function send(base: URL, req: FuzzRequest, agent: http.Agent): Promise<Outcome> {
  return new Promise((resolve, reject) => {
    const out = http.request(
      { host: base.hostname, port: base.port, method: req.method, path: req.path, headers: req.headers, agent, timeout: 20_000 },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      },
    );
    out.on('upgrade', (res, socket) => {
      socket.destroy();
      resolve({ status: res.statusCode ?? 101, body: '' });
    });
    out.on('timeout', () => out.destroy(new Error('request timed out')));
    out.on('error', reject);
    out.end(req.body);
  });
}

describe('API fuzz', function () {
  this.timeout(180_000);
  const fx = serverAndRepo();
  let ids: { project: string; slug: string; token: string; account: string };
  const refs = () => fx.repo.git('--git-dir', fx.repo.bare, 'for-each-ref', '--format=%(refname) %(objectname)');

  before(async () => {
    // Every branch at the same commit: even a merge the fuzz happens to get right is
    // `up-to-date` and moves no ref, so any ref change is the server's doing.
    for (const b of ['feature', 'topic']) fx.repo.git('push', '-q', 'origin', `main:refs/heads/${b}`);
    const api = client(fx.srv.url, fx.srv.token);
    const p = (await api.post('/v1/projects', { name: 'Fuzz target', repo_url: fx.repo.url })).body.project;
    ids = { project: p.project_id, slug: p.slug, token: fx.srv.token, account: fx.srv.accountId };
    const crs = `/v1/projects/${p.project_id}/change-requests`;
    expect((await api.post(crs, { title: 'open one', head_ref: 'feature' })).status).to.equal(201);
    expect((await api.post(crs, { title: 'closed one', head_ref: 'topic' })).status).to.equal(201);
    expect((await api.post(`${crs}/2/close`)).status).to.equal(200);
  });

  it(`answers ${COUNT} malformed requests with 4xx and the error body, never 5xx, and moves no ref`, async () => {
    console.log(`      fuzz seed ${SEED} (SVC_FUZZ_SEED=${SEED} to reproduce), ${COUNT} requests`);
    const r = prng(SEED);
    const requests = Array.from({ length: COUNT }, () => request(r, ids));
    const before = refs();
    const base = new URL(fx.srv.url);
    const agent = new http.Agent({ keepAlive: true, maxSockets: PARALLEL });
    const failures: string[] = [];
    const statuses = new Map<number, number>();
    const started = Date.now();
    let next = 0;
    const describe = (q: FuzzRequest) =>
      `${q.method} ${q.path.slice(0, 200)} ${JSON.stringify(q.headers).slice(0, 200)} ${q.body ? q.body.subarray(0, 200).toString('latin1') : '(no body)'}`;
    await Promise.all(
      Array.from({ length: PARALLEL }, async () => {
        for (let i = next++; i < requests.length; i = next++) {
          const q = requests[i]!;
          let res: Outcome;
          try {
            res = await send(base, q, agent);
          } catch (err) {
            failures.push(`#${i} ${(err as Error).message}: ${describe(q)}`);
            continue;
          }
          statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
          if (res.status >= 500) failures.push(`#${i} ${res.status} ${res.body.slice(0, 200)}: ${describe(q)}`);
          else if (res.status >= 400) {
            let b: { error?: unknown; message?: unknown } | undefined;
            try {
              b = JSON.parse(res.body);
            } catch {
              /* reported below */
            }
            if (typeof b?.error !== 'string' || typeof b?.message !== 'string') {
              failures.push(`#${i} ${res.status} without the error body (${res.body.slice(0, 100)}): ${describe(q)}`);
            }
          }
        }
      }),
    );
    agent.destroy();
    console.log(`      ${COUNT} requests in ${Date.now() - started} ms; statuses ${JSON.stringify(Object.fromEntries([...statuses].sort()))}`);
    if (failures.length) console.log(failures.map((f) => f.slice(0, 600)).join('\n'));
    expect(failures, `${failures.length} failures, first: ${failures.slice(0, 5).join('\n')}`).to.deep.equal([]);
    expect([...statuses.keys()].some((s) => s >= 400), 'the fuzz reached the validators').to.equal(true);

    // Still healthy, still serving, and the repository untouched.
    const api = client(fx.srv.url, fx.srv.token);
    expect((await api.get('/healthz')).status).to.equal(200);
    const list = await api.get(`/v1/projects/${ids.project}/change-requests`);
    expect(list.status).to.equal(200);
    expect(list.body.change_requests.length).to.be.greaterThan(1);
    expect(refs()).to.equal(before);
  });
});
