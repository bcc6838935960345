import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { startTestServer, type TestServer } from '../../support/server.js';
import { fixtureRepo, type FixtureRepo } from '../../support/repo.js';
import { client } from '../../support/http.js';

const CR_FIELDS = [
  'cr_id', 'account_id', 'project_id', 'number', 'title', 'description', 'base_ref', 'head_ref', 'status',
  'head_commit_sha', 'base_commit_sha', 'origin_session_id', 'created_by', 'merged_at', 'merged_by',
  'merge_commit_sha', 'closed_at', 'closed_by', 'metadata', 'created_at', 'updated_at',
];

describe('change-request API', function () {
  this.timeout(60_000);
  let srv: TestServer;
  let api: ReturnType<typeof client>;
  const repos: FixtureRepo[] = [];

  before(async () => {
    srv = await startTestServer();
    api = client(srv.url, srv.token);
  });
  after(async () => {
    await srv.stop();
    for (const r of repos) await r.cleanup();
  });

  /** Each test sets up what it reads: its own repo and project, so CR numbers start at 1. */
  async function fresh(): Promise<{ repo: FixtureRepo; base: string }> {
    const repo = await fixtureRepo();
    repos.push(repo);
    const p = await api.post('/v1/projects', { name: `Widget ${repos.length}`, repo_url: repo.url });
    expect(p.status).to.equal(201);
    return { repo, base: `/v1/projects/${p.body.project.project_id}/change-requests` };
  }
  /** Pushes `files` to `branch` and opens a CR for it; returns the CR. */
  async function opened(repo: FixtureRepo, base: string, branch: string, files: Record<string, string>, title = branch) {
    await repo.commit(branch, files);
    const res = await api.post(base, { title, head_ref: branch });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    return res.body.change_request;
  }

  it('creates a CR (201) with exactly the spec columns, tips anchored, default base and number 1', async () => {
    const { repo, base } = await fresh();
    const head = await repo.commit('feature-a', { 'a.txt': 'a\n' });
    const res = await api.post(base, { title: 'Add a', head_ref: 'feature-a' });
    expect(res.status).to.equal(201);
    const cr = res.body.change_request;
    expect(Object.keys(cr)).to.deep.equal(CR_FIELDS);
    expect(cr).to.include({ number: 1, title: 'Add a', description: '', base_ref: 'main', head_ref: 'feature-a', status: 'open' });
    expect(cr.head_commit_sha).to.equal(head);
    expect(cr.base_commit_sha).to.equal(repo.tip('main'));
    expect(cr.created_by).to.equal(srv.userId);
    expect(cr.origin_session_id).to.equal(null);
  });

  it('rejects head_ref == base_ref, an empty title, a missing head_ref and unknown fields with 400', async () => {
    const { repo, base } = await fresh();
    await repo.commit('feature-a', { 'a.txt': 'a\n' });
    for (const body of [
      { title: 'x', head_ref: 'main' },
      { title: 'x', head_ref: 'feature-a', base_ref: 'feature-a' },
      { title: '   ', head_ref: 'feature-a' },
      { title: 'x' },
      { title: 'x', head_ref: 'feature-a', surprise: 1 },
      { title: 'x', head_ref: '--upload-pack=evil' },
      { title: 'x', head_ref: '../../etc' },
    ]) {
      const res = await api.post(base, body);
      expect(res.status, JSON.stringify(body)).to.equal(400);
      expect(res.body.error).to.be.a('string');
      expect(res.body.message).to.be.a('string');
    }
    expect((await api.get(base)).body.change_requests, 'nothing was created').to.deep.equal([]);
  });

  it('refuses a head branch that does not exist with 400 naming it', async () => {
    const { base } = await fresh();
    const res = await api.post(base, { title: 'x', head_ref: 'never-pushed' });
    expect(res.status).to.equal(400);
    expect(res.body.message).to.match(/never-pushed/);
  });

  it('drops an unknown session_id silently', async () => {
    const { repo, base } = await fresh();
    await repo.commit('feature-s', { 's.txt': 's\n' });
    const res = await api.post(base, { title: 'S', head_ref: 'feature-s', session_id: randomUUID() });
    expect(res.status).to.equal(201);
    expect(res.body.change_request.origin_session_id).to.equal(null);
  });

  it('gets by number, #number and uuid; 404 for unknown ones', async () => {
    const { repo, base } = await fresh();
    const cr = await opened(repo, base, 'feature-a', { 'a.txt': 'a\n' });
    const byNum = await api.get(`${base}/1`);
    expect(byNum.status).to.equal(200);
    const id = byNum.body.change_request.cr_id;
    expect(id).to.equal(cr.cr_id);
    expect((await api.get(`${base}/${encodeURIComponent('#1')}`)).body.change_request.cr_id).to.equal(id);
    expect((await api.get(`${base}/${id}`)).body.change_request.number).to.equal(1);
    for (const ref of ['999', randomUUID(), 'nonsense', '0']) {
      const res = await api.get(`${base}/${ref}`);
      expect(res.status, ref).to.equal(404);
      expect(res.body.error).to.equal('Not found');
    }
  });

  it('refreshes an open CR on read when its head moves, recording Refreshed only on change', async () => {
    const { repo, base } = await fresh();
    const before = await opened(repo, base, 'feature-a', { 'a.txt': 'a\n' });
    const moved = await repo.commit('feature-a', { 'a2.txt': 'more\n' });
    const after = (await api.get(`${base}/1`)).body.change_request;
    expect(after.head_commit_sha).to.equal(moved);
    expect(after.updated_at > before.updated_at).to.equal(true);
    await api.get(`${base}/1`);
    const events = (await api.get(`${base}/1/events`)).body.events.map((e: { type: string }) => e.type);
    expect(events).to.deep.equal(['ChangeRequestOpened', 'ChangeRequestRefreshed']);
  });

  it('lists newest first, filtered by status (default all)', async () => {
    const { repo, base } = await fresh();
    await opened(repo, base, 'feature-a', { 'a.txt': 'a\n' });
    await opened(repo, base, 'feature-b', { 'b.txt': 'b\n' });
    expect((await api.post(`${base}/2/close`)).status).to.equal(200);
    const all = await api.get(base);
    expect(all.status).to.equal(200);
    expect(all.body.change_requests.map((c: { number: number }) => c.number)).to.deep.equal([2, 1]);
    expect((await api.get(`${base}?status=closed`)).body.change_requests.map((c: { number: number }) => c.number)).to.deep.equal([2]);
    expect((await api.get(`${base}?status=open`)).body.change_requests.map((c: { number: number }) => c.number)).to.deep.equal([1]);
    expect((await api.get(`${base}?status=merged`)).body.change_requests).to.deep.equal([]);
    expect((await api.get(`${base}?status=bogus`)).status).to.equal(400);
  });

  it('edits title and description (PATCH), rejecting an empty title and empty bodies', async () => {
    const { repo, base } = await fresh();
    await opened(repo, base, 'feature-a', { 'a.txt': 'a\n' });
    const res = await api.patch(`${base}/1`, { title: 'Add a and a2', description: 'Why: tests.' });
    expect(res.status).to.equal(200);
    expect(res.body.change_request).to.include({ title: 'Add a and a2', description: 'Why: tests.' });
    expect((await api.patch(`${base}/1`, { title: '' })).status).to.equal(400);
    expect((await api.patch(`${base}/1`, {})).status).to.equal(400);
    expect((await api.patch(`${base}/1`, { status: 'merged' })).status).to.equal(400);
    expect((await api.get(`${base}/1`)).body.change_request, 'the refused edits changed nothing').to.include({ title: 'Add a and a2', status: 'open' });
  });

  it('serves a three-dot diff with per-file status and counts', async () => {
    const { repo, base } = await fresh();
    await repo.commit('feature-a', { 'a.txt': 'a\n' });
    await opened(repo, base, 'feature-a', { 'a2.txt': 'more\n' });
    await repo.commit('main', { 'on-main-only.txt': 'base moved\n' });
    const res = await api.get(`${base}/1/diff`);
    expect(res.status).to.equal(200);
    const paths = res.body.files.map((f: { path: string }) => f.path).sort();
    expect(paths).to.deep.equal(['a.txt', 'a2.txt']); // excludes changes only on base
    expect(res.body.files[0]).to.include({ status: 'added', deletions: 0, binary: false });
    expect(res.body.additions).to.equal(2);
    expect(res.body.patch).to.match(/^diff --git/);
  });

  it('previews a merge (diverged, clean) and merges it with a merge commit by the system identity', async () => {
    const { repo, base } = await fresh();
    await opened(repo, base, 'feature-a', { 'a.txt': 'a\n' }, 'Add a and a2');
    await repo.commit('main', { 'on-main-only.txt': 'base moved\n' });
    const preview = await api.get(`${base}/1/merge-preview`);
    expect(preview.status).to.equal(200);
    expect(preview.body).to.include({ is_up_to_date: false, can_merge: true, can_fast_forward: false });
    expect(preview.body.conflicts).to.deep.equal([]);
    const baseBefore = repo.tip('main');
    const headTip = repo.tip('feature-a');
    const res = await api.post(`${base}/1/merge`, {});
    expect(res.status).to.equal(200);
    const cr = res.body.change_request;
    expect(cr).to.include({ status: 'merged', merged_by: srv.userId, base_commit_sha: baseBefore, head_commit_sha: headTip });
    expect(cr.merge_commit_sha).to.equal(repo.tip('main'));
    repo.git('fetch', '-q', 'origin');
    expect(repo.git('rev-parse', 'origin/main'), 'the remote base holds the merge commit').to.equal(cr.merge_commit_sha);
    expect(repo.git('log', '-1', '--format=%P|%an|%s', cr.merge_commit_sha)).to.equal(`${baseBefore} ${headTip}|svc|Merge CR #1: Add a and a2`);
    expect(repo.tip('feature-a'), 'the head branch is not deleted').to.equal(headTip);
  });

  it('keeps serving the merged diff from the captured SHAs after the branches move', async () => {
    const { repo, base } = await fresh();
    await opened(repo, base, 'feature-a', { 'a.txt': 'a\n', 'a2.txt': 'more\n' });
    expect((await api.post(`${base}/1/merge`, {})).status).to.equal(200);
    await repo.commit('feature-a', { 'later.txt': 'after merge\n' });
    const res = await api.get(`${base}/1/diff`);
    expect(res.body.files.map((f: { path: string }) => f.path).sort()).to.deep.equal(['a.txt', 'a2.txt']);
    const cr = (await api.get(`${base}/1`)).body.change_request;
    expect(cr.head_commit_sha, 'merged CRs are not refreshed').to.not.equal(repo.tip('feature-a'));
  });

  it('treats merged as terminal: merge, close and reopen are 409', async () => {
    const { repo, base } = await fresh();
    await opened(repo, base, 'feature-a', { 'a.txt': 'a\n' });
    expect((await api.post(`${base}/1/merge`, {})).status).to.equal(200);
    for (const action of ['merge', 'close', 'reopen']) {
      const res = await api.post(`${base}/1/${action}`, action === 'merge' ? {} : undefined);
      expect(res.status, action).to.equal(409);
    }
  });

  it('fast-forwards when head is strictly ahead (merge_commit_sha = head)', async () => {
    const { repo, base } = await fresh();
    const head = await repo.commit('feature-ff', { 'ff.txt': 'ff\n' });
    const cr = (await api.post(base, { title: 'FF', head_ref: 'feature-ff' })).body.change_request;
    const preview = (await api.get(`${base}/${cr.number}/merge-preview`)).body;
    expect(preview).to.include({ can_fast_forward: true, can_merge: true });
    const merged = (await api.post(`${base}/${cr.number}/merge`, { message: 'custom' })).body.change_request;
    expect(merged.merge_commit_sha).to.equal(head);
    expect(repo.tip('main')).to.equal(head);
  });

  it('answers a conflicting merge with 409 "Merge failed" and the paths; the CR stays open', async () => {
    const { repo, base } = await fresh();
    await repo.commit('main', { 'clash.txt': 'main side\n' });
    await repo.commit('feature-clash', { 'clash.txt': 'head side\n' }, { from: 'main~1' });
    const cr = (await api.post(base, { title: 'Clash', head_ref: 'feature-clash' })).body.change_request;
    const preview = (await api.get(`${base}/${cr.number}/merge-preview`)).body;
    expect(preview.can_merge).to.equal(false);
    expect(preview.conflicts).to.deep.equal(['clash.txt']);
    const mainBefore = repo.tip('main');
    const res = await api.post(`${base}/${cr.number}/merge`, {});
    expect(res.status).to.equal(409);
    expect(res.body.error).to.equal('Merge failed');
    expect(res.body.conflicts).to.deep.equal(['clash.txt']);
    expect(repo.tip('main')).to.equal(mainBefore);
    expect((await api.get(`${base}/${cr.number}`)).body.change_request.status).to.equal('open');
  });

  it('closes, refuses a second close and a merge of a closed CR, reopens, refuses reopening an open CR', async () => {
    const { repo, base } = await fresh();
    const { number: n } = await opened(repo, base, 'feature-s', { 's.txt': 's\n' });
    const closed = await api.post(`${base}/${n}/close`);
    expect(closed.status).to.equal(200);
    expect(closed.body.change_request).to.include({ status: 'closed', closed_by: srv.userId });
    expect((await api.post(`${base}/${n}/close`)).status).to.equal(409);
    expect((await api.post(`${base}/${n}/merge`, {})).status).to.equal(409);
    const reopened = await api.post(`${base}/${n}/reopen`);
    expect(reopened.body.change_request).to.include({ status: 'open', closed_at: null, closed_by: null });
    expect((await api.post(`${base}/${n}/reopen`)).status).to.equal(409);
  });

  it('refuses a merge whose head moved past expected_head_sha with 409 "Head branch was modified"', async () => {
    const { repo, base } = await fresh();
    const first = await repo.commit('feature-race', { 'r.txt': '1\n' });
    const cr = (await api.post(base, { title: 'Race', head_ref: 'feature-race' })).body.change_request;
    await repo.commit('feature-race', { 'r.txt': '2\n' });
    const res = await api.post(`${base}/${cr.number}/merge`, { expected_head_sha: first });
    expect(res.status).to.equal(409);
    expect(res.body.error).to.equal('Head branch was modified');
    expect((await api.get(`${base}/${cr.number}`)).body.change_request.status).to.equal('open');
  });

  it('folds the history as of a past instant (?as_of=) and lists events with actors', async () => {
    const { repo, base } = await fresh();
    await opened(repo, base, 'feature-a', { 'a.txt': 'a\n' }, 'Add a');
    await repo.commit('feature-a', { 'a2.txt': 'more\n' });
    await api.get(`${base}/1`); // refresh on read
    expect((await api.patch(`${base}/1`, { title: 'Add a and a2' })).status).to.equal(200);
    expect((await api.post(`${base}/1/merge`, {})).status).to.equal(200);
    const events = (await api.get(`${base}/1/events`)).body.events;
    expect(events.map((e: { type: string }) => e.type)).to.deep.equal([
      'ChangeRequestOpened', 'ChangeRequestRefreshed', 'ChangeRequestEdited', 'ChangeRequestMerged',
    ]);
    expect(events.every((e: { actor: string }) => e.actor === srv.userId)).to.equal(true);
    const beforeMerge = events[2].recorded_at;
    const then = await api.get(`${base}/1?as_of=${encodeURIComponent(beforeMerge)}`);
    expect(then.body.change_request).to.include({ status: 'open', title: 'Add a and a2' });
    expect((await api.get(`${base}/1?as_of=yesterday`)).status).to.equal(400);
  });

  it('serves malformed JSON as 400 and a body over 1 MiB as 413', async () => {
    const { base } = await fresh();
    const bad = await api.call('POST', base, '{"title": ', { 'content-type': 'application/json' });
    expect(bad.status).to.equal(400);
    expect(bad.body.error).to.equal('Invalid JSON');
    const huge = await api.call('POST', base, JSON.stringify({ title: 'x'.repeat(1_100_000), head_ref: 'a' }));
    expect(huge.status).to.equal(413);
  });

  it('publishes an OpenAPI document generated from the route schemas', async () => {
    const res = await client(srv.url).get('/v1/openapi.json');
    expect(res.status).to.equal(200);
    expect(res.body.openapi).to.equal('3.1.0');
    const create = res.body.paths['/v1/projects/{projectId}/change-requests'].post;
    expect(create.requestBody.content['application/json'].schema.required).to.include.members(['title', 'head_ref']);
  });
});
