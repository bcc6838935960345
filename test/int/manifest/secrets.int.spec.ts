import { expect } from 'chai';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createTestDb, type TestDb } from '../../support/db.js';
import { spawnTestServer, type SpawnedServer } from '../../support/server.js';
import { fixtureRepo, type FixtureRepo } from '../../support/repo.js';
import { client } from '../../support/http.js';
import { bootstrapUser } from '../../../services/accounts/service.js';
import { addKeyToFile, fileKeyring, loadKeyring, secretBox } from '../../../infra/secret-box.js';
import { sandboxSecrets } from '../../../services/secrets/sandbox-env.js';
import { rotateSecrets } from '../../../services/secrets/rotate.js';
import { eventually } from './support.js';

/** Values no response, log line or event may ever contain. */
const V1 = 'sk-live-VALUE-ONE-7c1d';
const V2 = 'hunter2-VALUE-TWO-90ab';
const SAME = 'EQUAL-VALUE-3f3f';

describe('project secrets API (a real svc-server process; its log is searched)', function () {
  this.timeout(90_000);
  let tdb: TestDb;
  let srv: SpawnedServer;
  let repo: FixtureRepo;
  let dataDir: string;
  let api: ReturnType<typeof client>;
  let base: string;
  let projectId: string;
  const seen: string[] = [];

  const call = async (method: string, p: string, body?: unknown) => {
    const r = await api.call(method, p, body);
    seen.push(JSON.stringify({ s: r.status, b: r.body ?? null, h: [...r.headers.entries()] }));
    return r;
  };

  before(async () => {
    tdb = await createTestDb();
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'svc-secrets-'));
    repo = await fixtureRepo();
    srv = await spawnTestServer({ DATABASE_URL: tdb.url, SVC_DATA_DIR: dataDir, LOG_LEVEL: 'trace' });
    const u = await bootstrapUser(tdb.db, { email: 'sec@example.test' });
    api = client(srv.url, u.token.token);
    const p = await api.post('/v1/projects', { name: 'Sec', slug: 'sec', repo_url: repo.url });
    projectId = p.body.project.project_id;
    base = `/v1/projects/sec`;
    await repo.commit('main', { 'svc.toml': '[env]\nrequired = ["OPENAI_API_KEY", "DB_URL"]\noptional = { SENTRY_DSN = "errors" }\n' });
  });
  after(async () => {
    await srv.stop();
    await tdb.drop();
    await repo.cleanup();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('PUT/PATCH/DELETE change names and revision; GET lists names, the [env] spec and what is missing, never values', async () => {
    expect((await call('GET', `${base}/manifest`)).status).to.equal(200);
    const empty = await call('GET', `${base}/secrets`);
    expect(empty.body).to.deep.equal({
      secrets: [],
      env: { required: [{ name: 'OPENAI_API_KEY', description: '' }, { name: 'DB_URL', description: '' }], optional: [{ name: 'SENTRY_DSN', description: 'errors' }], missing: ['OPENAI_API_KEY', 'DB_URL'] },
      revision: 0,
    });
    expect((await call('PUT', `${base}/secrets/OPENAI_API_KEY`, { value: V1 })).status).to.equal(204);
    const patched = await call('PATCH', `${base}/secrets`, { set: { DB_URL: V2, A_COPY: SAME, B_COPY: SAME } });
    expect(patched.status).to.equal(200);
    expect(patched.body.secrets.map((s: { name: string }) => s.name)).to.deep.equal(['A_COPY', 'B_COPY', 'DB_URL', 'OPENAI_API_KEY']);
    expect(Object.keys(patched.body.secrets[0])).to.deep.equal(['name', 'updated_at']);
    expect(patched.body.env.missing).to.deep.equal([]);
    expect(patched.body.revision).to.equal(2);
    expect((await call('DELETE', `${base}/secrets/B_COPY`)).status).to.equal(204);
    expect((await call('DELETE', `${base}/secrets/B_COPY`)).status).to.equal(404);
    const after = await call('GET', `${base}/secrets`);
    expect(after.body.revision).to.equal(3);
    expect(after.body.secrets.map((s: { name: string }) => s.name)).to.deep.equal(['A_COPY', 'DB_URL', 'OPENAI_API_KEY']);
  });

  it('refuses SVC_ names and malformed names with a 400 naming the rule; bad bodies are 400, never 500', async () => {
    const svc = await call('PUT', `${base}/secrets/SVC_TOKEN`, { value: V1 });
    expect(svc.status).to.equal(400);
    expect(svc.body.message).to.match(/SVC_/).and.match(/reserved/);
    for (const name of ['lower', '1ABC', 'A-B', 'A%20B']) {
      const r = await call('PUT', `${base}/secrets/${name}`, { value: V1 });
      expect(r.status, name).to.equal(400);
      expect(r.body.message).to.contain('^[A-Z_][A-Z0-9_]*$');
    }
    for (const body of [{ value: 5 }, { value: V1, extra: 1 }, {}, [V1]]) {
      const r = await call('PUT', `${base}/secrets/OK_NAME`, body);
      expect(r.status, JSON.stringify(body)).to.equal(400);
    }
    // A bad name in the URL is an issue on `name` (not on an internal list); every validation 400 carries `issues`.
    for (const method of ['DELETE', 'PUT']) {
      const r = await call(method, `${base}/secrets/bad-name`, method === 'PUT' ? { value: V1 } : undefined);
      expect(r.status, method).to.equal(400);
      expect(r.body.issues, method).to.deep.equal([{ path: 'name', message: 'must match ^[A-Z_][A-Z0-9_]*$' }]);
    }
    const empty = await call('PATCH', `${base}/secrets`, {});
    expect(empty.status).to.equal(400);
    expect(empty.body).to.deep.equal({
      error: 'Validation failed',
      message: 'Nothing to change: give "set" or "unset".',
      issues: [{ path: '(body)', message: 'set or unset is required (and not empty)' }],
    });
    const both = await call('PATCH', `${base}/secrets`, { set: { OK_NAME: V1 }, unset: ['OTHER', 'OK_NAME'] });
    expect(both.status).to.equal(400);
    expect(both.body.issues).to.deep.equal([{ path: 'unset.1', message: 'OK_NAME is also in set' }]);
    const raw = await api.call('PUT', `${base}/secrets/OK_NAME`, '{"value": "' + V1, { 'content-type': 'application/json' });
    expect(raw.status).to.equal(400);
  });

  it('applies a batch atomically: one bad name and nothing changes', async () => {
    const before = (await call('GET', `${base}/secrets`)).body;
    const r = await call('PATCH', `${base}/secrets`, { set: { NEW_ONE: V1, SVC_NOPE: V2 }, unset: ['DB_URL'] });
    expect(r.status).to.equal(400);
    expect(r.body.message).to.match(/SVC_NOPE/);
    const r2 = await call('PATCH', `${base}/secrets`, { set: { NEW_ONE: V1 }, unset: ['DB_URL', 'bad name'] });
    expect(r2.status).to.equal(400);
    expect((await call('GET', `${base}/secrets`)).body).to.deep.equal(before);
    const ok = await call('PATCH', `${base}/secrets`, { set: { NEW_ONE: V1 }, unset: ['A_COPY'] });
    expect(ok.body.revision).to.equal(before.revision + 1);
  });

  it('unsetting a name that is not set (DELETE or PATCH, alone or in a batch) is a 404 and changes nothing, the revision included', async () => {
    const before = (await call('GET', `${base}/secrets`)).body;
    const del = await call('DELETE', `${base}/secrets/NEVER_SET`);
    expect(del.status).to.equal(404);
    expect(del.body).to.deep.equal({ error: 'Not found', message: 'Secret NEVER_SET not found.' });
    const patch = await call('PATCH', `${base}/secrets`, { unset: ['NEVER_SET'] });
    expect(patch.status).to.equal(404);
    expect(patch.body).to.deep.equal({ error: 'Not found', message: 'Secret NEVER_SET not found.' });
    const batch = await call('PATCH', `${base}/secrets`, { set: { BRAND_NEW: V1 }, unset: [before.secrets[0].name, 'NEVER_SET'] });
    expect(batch.status).to.equal(404);
    expect((await call('GET', `${base}/secrets`)).body).to.deep.equal(before);
  });

  it('stores AES-GCM ciphertext (a fresh nonce each: equal values differ) that opens into a sandbox env', async () => {
    await call('PATCH', `${base}/secrets`, { set: { X_ONE: SAME, X_TWO: SAME } });
    const rows = await tdb.db.rows<{ name: string; value_enc: string }>({ text: 'SELECT name, value_enc FROM project_secrets ORDER BY name', values: [] });
    const enc = Object.fromEntries(rows.map((r) => [r.name, r.value_enc]));
    expect(enc.X_ONE).to.match(/^v2\./).and.not.equal(enc.X_TWO);
    for (const v of Object.values(enc)) expect(v).to.not.contain(SAME).and.not.contain(V1);
    const box = secretBox(await loadKeyring({ dataDir }));
    const s = await sandboxSecrets(tdb.db, box, projectId);
    expect(s.env).to.include({ X_ONE: SAME, X_TWO: SAME, OPENAI_API_KEY: V1, NEW_ONE: V1 });
    expect(s.names).to.deep.equal(Object.keys(s.env).sort());
    expect(s.revision).to.equal((await call('GET', `${base}/secrets`)).body.revision);
  });

  it('rotates the key while the server runs: every value resealed under the new key id, still readable, new writes under it', async () => {
    const newKid = await addKeyToFile(dataDir);
    const report = await rotateSecrets(tdb.db, secretBox(fileKeyring(path.join(dataDir, 'secret.key'))));
    expect(report.key_id).to.equal(newKid);
    expect(report.resealed).to.be.greaterThan(0);
    const rows = await tdb.db.rows<{ value_enc: string }>({ text: 'SELECT value_enc FROM project_secrets', values: [] });
    expect(rows.every((r) => r.value_enc.split('.')[1] === newKid)).to.equal(true);
    const env = (await sandboxSecrets(tdb.db, secretBox(await loadKeyring({ dataDir })), projectId)).env;
    expect(env.OPENAI_API_KEY).to.equal(V1);
    // The running server picks the new key up from the file (no restart): its next write uses it.
    await eventually(async () => {
      await call('PUT', `${base}/secrets/AFTER_ROTATION`, { value: V2 });
      const r = await tdb.db.one<{ value_enc: string }>({ text: "SELECT value_enc FROM project_secrets WHERE name = 'AFTER_ROTATION'", values: [] });
      return r!.value_enc.split('.')[1] === newKid;
    }, 'the server to seal under the new key', 10_000);
    // A second pass finds nothing left to do.
    const again = await rotateSecrets(tdb.db, secretBox(fileKeyring(path.join(dataDir, 'secret.key'))));
    expect(again.resealed).to.equal(0);
  });

  it('never lets a value reach a response, the server log or the events table', async () => {
    const events = await tdb.db.rows<{ row: string }>({ text: "SELECT row_to_json(e)::text AS row FROM events e WHERE stream_id LIKE 'secrets-%'", values: [] });
    expect(events.length).to.be.greaterThan(5);
    expect(events.map((e) => e.row).join('\n')).to.contain('OPENAI_API_KEY');
    const log = srv.output();
    expect(log.length).to.be.greaterThan(100);
    for (const v of [V1, V2, SAME]) {
      expect(seen.join('\n'), 'responses').to.not.contain(v);
      expect(log, 'server log').to.not.contain(v);
      expect(events.map((e) => e.row).join('\n'), 'events').to.not.contain(v);
    }
  });
});
