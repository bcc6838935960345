import { expect } from 'chai';
import { client } from '../../support/http.js';
import { authedUrl, workDir, type WorkDir } from '../../support/git-client.js';
import { startTestServer, type TestServer } from '../../support/server.js';
import { agentReady, fakeRuntime, killSandboxes, killSandboxesUnder, waitForStatus } from '../../support/sessions.js';
import { AGENT_BRANCH_MESSAGE, AGENT_STACK_BRANCH_MESSAGE } from '../../../infra/git/pre-receive.js';
import { rebuildProjections } from '../../../projections/rebuild.js';
import { csrfIn, dashFetch, signInHttp, withPassword } from '../../dashboard/support.js';
import { setFailpoint } from '../../../lib/failpoints.js';

const CR_FIELDS = [
  'cr_id', 'account_id', 'project_id', 'number', 'title', 'description', 'base_ref', 'head_ref', 'status',
  'head_commit_sha', 'base_commit_sha', 'origin_session_id', 'created_by', 'merged_at', 'merged_by',
  'merge_commit_sha', 'closed_at', 'closed_by', 'metadata', 'created_at', 'updated_at',
];

/**
 * Stacked change requests over real HTTP, git and PostgreSQL: a managed project whose
 * pushes go through the server's pre-receive, an agent (session A, the process provider
 * with the scripted runtime) that pushes its session branch and its stack branches
 * `<A>-<n>` and opens CRs from them, and a person who merges. Session B only lends its
 * name: A must not push B's stack branches.
 */
describe('stacked change requests', function () {
  this.timeout(180_000);
  let srv: TestServer;
  let w: WorkDir;
  let repoUrl: string;
  let agentRepoUrl: string;
  let agentBase: string;
  let a: { id: string; cli: string };
  let b: string;
  const P = '/v1/projects/stacks';
  const CR = `${P}/change-requests`;
  let person: ReturnType<typeof client>;
  let agent: ReturnType<typeof client>;

  before(async () => {
    srv = await startTestServer({ env: { SVC_AGENT_RUNTIME: fakeRuntime, SVC_SANDBOX_MAX_REQUEST_RATE: '500', SVC_SANDBOX_MAX_REQUESTS: '64' } });
    person = client(srv.url, srv.token);
    const created = await person.post('/v1/projects', { name: 'stacks', slug: 'stacks' });
    expect(created.status, JSON.stringify(created.body)).to.equal(201);
    const projectId = created.body.project.project_id;
    repoUrl = created.body.project.repo_url;
    w = await workDir();
    await w.ok(['init', '-q', '-b', 'main']);
    await w.commit({ 'README.md': 'hello\n' }, 'first');
    await w.ok(['push', '-q', authedUrl(repoUrl, srv.token), 'main']);
    const sa = (await person.post(`${P}/sessions`, {})).body.session;
    const sb = (await person.post(`${P}/sessions`, {})).body.session;
    await waitForStatus(person, `${P}/sessions/${sa.session_id}`, ['running']);
    const env = (await agentReady(person, `${P}/sessions/${sa.session_id}/agent/fake/state`)).body.env as Record<string, string>;
    agentBase = new URL(env.SVC_API_URL!).origin;
    agentRepoUrl = `${agentBase}/git/${projectId}.git`;
    a = { id: sa.session_id, cli: env.SVC_CLI_TOKEN! };
    b = sb.session_id;
    agent = client(agentBase, a.cli);
  });

  after(async () => {
    await w?.cleanup();
    if (srv) await killSandboxes(srv.db);
    await srv?.stop();
    if (srv) await killSandboxesUnder(srv.dataDir);
  });

  const agentPush = (ref: string) => w.run(['push', authedUrl(agentRepoUrl, a.cli), `HEAD:refs/heads/${ref}`]);
  const personPush = (ref: string) => w.ok(['push', '-q', authedUrl(repoUrl, srv.token), `HEAD:refs/heads/${ref}`]);
  const tip = async (ref: string) => (await w.ok(['ls-remote', authedUrl(repoUrl, srv.token), `refs/heads/${ref}`])).split('\t')[0] || null;
  const fetchMain = async () => {
    await w.ok(['fetch', '-q', authedUrl(repoUrl, srv.token), 'main']);
    await w.ok(['checkout', '-q', '-B', 'work', 'FETCH_HEAD']);
  };
  const open = async (c: ReturnType<typeof client>, body: Record<string, unknown>) => {
    const r = await c.post(CR, body);
    expect(r.status, JSON.stringify(r.body)).to.equal(201);
    return r.body.change_request;
  };
  const stackOf = async (n: number) => {
    const r = await person.get(`${CR}/${n}/stack`);
    expect(r.status, JSON.stringify(r.body)).to.equal(200);
    return r.body as { cr_id: string; stack: { change_request: any; parent_cr_id: string | null; child_cr_ids: string[]; note: string | null }[] };
  };
  const events = async (n: number) => (await person.get(`${CR}/${n}/events`)).body.events as { type: string; data: any }[];
  const files = async (n: number) => ((await person.get(`${CR}/${n}/diff`)).body.files as { path: string }[]).map((f) => f.path);

  it('a stack of three CRs, two from the agent\'s stack branches: {"stack": true} merges all three bottom-up', async () => {
    await fetchMain();
    await w.commit({ 'one.txt': '1\n' }, 'one');
    expect((await agentPush(a.id)).code).to.equal(0);
    await w.commit({ 'two.txt': '2\n' }, 'two');
    const p1 = await agentPush(`${a.id}-1`);
    expect(p1.code, p1.stderr).to.equal(0);
    await w.commit({ 'three.txt': '3\n' }, 'three');
    expect((await agentPush(`${a.id}-2`)).code).to.equal(0);

    const bottom = await open(agent, { title: 'one', head_ref: a.id });
    const middle = await open(agent, { title: 'two', head_ref: `${a.id}-1`, base_ref: a.id });
    const top = await open(agent, { title: 'three', head_ref: `${a.id}-2`, base_ref: `${a.id}-1` });
    // The CR's own JSON keeps exactly the spec's fields; the stack has its own route.
    expect(Object.keys(top)).to.deep.equal(CR_FIELDS);
    expect(top.origin_session_id).to.equal(a.id);
    // A stack branch's CR stacks on the agent's own work only.
    const offMain = await agent.post(CR, { title: 'x', head_ref: `${a.id}-2` });
    expect(offMain.status).to.equal(403);
    expect(offMain.body.code).to.equal('agent_forbidden');

    const s = await stackOf(top.number);
    expect(s.cr_id).to.equal(top.cr_id);
    expect(s.stack.map((e) => e.change_request.number)).to.deep.equal([bottom.number, middle.number, top.number]);
    expect(s.stack.map((e) => e.parent_cr_id)).to.deep.equal([null, bottom.cr_id, middle.cr_id]);
    expect(s.stack.map((e) => e.child_cr_ids)).to.deep.equal([[middle.cr_id], [top.cr_id], []]);
    expect((await stackOf(bottom.number)).stack).to.have.length(3);
    expect(await files(top.number)).to.deep.equal(['three.txt']);

    // An agent cannot merge the stack; a person can.
    expect((await agent.post(`${CR}/${top.number}/merge`, { stack: true })).status).to.equal(403);
    const merged = await person.post(`${CR}/${top.number}/merge`, { stack: true });
    expect(merged.status, JSON.stringify(merged.body)).to.equal(200);
    expect(merged.body.change_request).to.include({ number: top.number, status: 'merged', base_ref: 'main' });
    const crs = await Promise.all([bottom, middle, top].map(async (c) => (await person.get(`${CR}/${c.number}`)).body.change_request));
    expect(crs.map((c) => [c.status, c.base_ref])).to.deep.equal([['merged', 'main'], ['merged', 'main'], ['merged', 'main']]);
    // Bottom-up: each merged after the one below it, each into main.
    expect(Date.parse(crs[0].merged_at)).to.be.at.most(Date.parse(crs[1].merged_at));
    expect(Date.parse(crs[1].merged_at)).to.be.at.most(Date.parse(crs[2].merged_at));
    const retargets = (await events(middle.number)).filter((e) => e.type === 'ChangeRequestRetargeted');
    expect(retargets.map((e) => e.data)).to.have.length(1);
    expect(retargets[0]!.data).to.include({ from: a.id, to: 'main', by: 'system', parent_cr_id: null });
    expect(await tip('main')).to.equal(crs[2].merge_commit_sha);
    await fetchMain();
    for (const f of ['one.txt', 'two.txt', 'three.txt']) expect((await w.run(['cat-file', '-e', `HEAD:${f}`])).code, f).to.equal(0);
  });

  it('merging the bottom alone retargets the middle, whose diff then shows only its own commits; a top merged alone lands on its parent\'s branch', async () => {
    await fetchMain();
    await w.commit({ 'four.txt': '4\n' }, 'four');
    expect((await agentPush(a.id)).code).to.equal(0);
    await w.commit({ 'five.txt': '5\n' }, 'five');
    expect((await agentPush(`${a.id}-3`)).code).to.equal(0);
    await w.commit({ 'six.txt': '6\n' }, 'six');
    expect((await agentPush(`${a.id}-4`)).code).to.equal(0);
    const bottom = await open(agent, { title: 'four', head_ref: a.id });
    const middle = await open(agent, { title: 'five', head_ref: `${a.id}-3`, base_ref: a.id });
    const top = await open(agent, { title: 'six', head_ref: `${a.id}-4`, base_ref: `${a.id}-3` });
    expect(await files(middle.number)).to.deep.equal(['five.txt']);

    // The top alone merges into its parent's branch (its base_ref), not main.
    const mainBefore = await tip('main');
    const topMerged = await person.post(`${CR}/${top.number}/merge`, {});
    expect(topMerged.status, JSON.stringify(topMerged.body)).to.equal(200);
    expect(await tip('main')).to.equal(mainBefore);
    expect(await tip(`${a.id}-3`)).to.equal(topMerged.body.change_request.merge_commit_sha);
    expect((await person.get(`${CR}/${middle.number}`)).body.change_request.head_commit_sha).to.equal(await tip(`${a.id}-3`));

    const m = await person.post(`${CR}/${bottom.number}/merge`, {});
    expect(m.status, JSON.stringify(m.body)).to.equal(200);
    const after = (await person.get(`${CR}/${middle.number}`)).body.change_request;
    expect(after).to.include({ status: 'open', base_ref: 'main', base_commit_sha: await tip('main') });
    const retarget = (await events(middle.number)).find((e) => e.type === 'ChangeRequestRetargeted');
    expect(retarget?.data).to.include({ from: a.id, to: 'main', by: 'system' });
    // Its diff is now its own commits only (four.txt is on main).
    expect(await files(middle.number)).to.deep.equal(['five.txt', 'six.txt']);
    const s = await stackOf(middle.number);
    expect(s.stack.map((e) => e.change_request.number)).to.deep.equal([middle.number, top.number]);
    expect(s.stack[0]!.parent_cr_id).to.equal(null);
  });

  it('PATCH base_ref: an agent\'s is 403; a person\'s records ChangeRequestRetargeted; ambiguity and a cycle are 400', async () => {
    await fetchMain();
    await w.commit({ 'seven.txt': '7\n' }, 'seven');
    expect((await agentPush(a.id)).code).to.equal(0);
    await w.commit({ 'eight.txt': '8\n' }, 'eight');
    expect((await agentPush(`${a.id}-5`)).code).to.equal(0);
    const own = await open(agent, { title: 'seven', head_ref: a.id });
    const child = await open(agent, { title: 'eight', head_ref: `${a.id}-5`, base_ref: a.id });
    for (const n of [own.number, child.number]) {
      const r = await agent.call('PATCH', `${CR}/${n}`, { base_ref: 'main' });
      expect(r.status, JSON.stringify(r.body)).to.equal(403);
      expect(r.body.code).to.equal('agent_forbidden');
    }
    expect((await agent.call('PATCH', `${CR}/${child.number}`, { title: 'eight, edited' })).status).to.equal(200);
    expect((await person.get(`${CR}/${child.number}`)).body.change_request.base_ref).to.equal(a.id);

    // A person retargets: recorded, the parent goes with the old base.
    const moved = await person.call('PATCH', `${CR}/${child.number}`, { base_ref: 'main' });
    expect(moved.status, JSON.stringify(moved.body)).to.equal(200);
    expect(Object.keys(moved.body.change_request)).to.deep.equal(CR_FIELDS);
    expect(moved.body.change_request.base_ref).to.equal('main');
    const ev = (await events(child.number)).filter((e) => e.type === 'ChangeRequestRetargeted');
    expect(ev.map((e) => e.data)).to.deep.equal([{ ...ev[0]!.data, from: a.id, to: 'main', by: srv.userId, parent_cr_id: null }]);
    expect((await stackOf(child.number)).stack).to.have.length(1);
    // And back onto the agent's branch: stacked again.
    expect((await person.call('PATCH', `${CR}/${child.number}`, { base_ref: a.id })).status).to.equal(200);
    expect((await stackOf(child.number)).stack.map((e) => e.change_request.number)).to.deep.equal([own.number, child.number]);

    // Ambiguity: two open CRs with the same head.
    await fetchMain();
    await w.commit({ 'dup.txt': 'd\n' }, 'dup');
    await personPush('dup');
    await open(person, { title: 'dup 1', head_ref: 'dup' });
    await open(person, { title: 'dup 2', head_ref: 'dup' });
    await w.commit({ 'on-dup.txt': 'x\n' }, 'on dup');
    await personPush('on-dup');
    const ambiguous = await person.post(CR, { title: 'on dup', head_ref: 'on-dup', base_ref: 'dup' });
    expect(ambiguous.status).to.equal(400);
    expect(ambiguous.body).to.include({ error: 'Validation failed' });
    expect(ambiguous.body.message).to.match(/head branch of 2 open change requests/);
    expect(ambiguous.body.issues).to.deep.equal([{ path: 'base_ref', message: 'ambiguous stack parent' }]);
    const retargetAmbiguous = await person.call('PATCH', `${CR}/${child.number}`, { base_ref: 'dup' });
    expect(retargetAmbiguous.status).to.equal(400);

    // A cycle: p1 based on p2, then p2 based on p1; and a retarget of a parent onto its child.
    await fetchMain();
    await w.commit({ 'p.txt': 'p\n' }, 'p');
    await personPush('p1');
    await personPush('p2');
    await open(person, { title: 'p1 on p2', head_ref: 'p1', base_ref: 'p2' });
    const cycle = await person.post(CR, { title: 'p2 on p1', head_ref: 'p2', base_ref: 'p1' });
    expect(cycle.status, JSON.stringify(cycle.body)).to.equal(400);
    expect(cycle.body.issues).to.deep.equal([{ path: 'base_ref', message: 'stack cycle' }]);
    const onto = await person.call('PATCH', `${CR}/${own.number}`, { base_ref: `${a.id}-5` });
    expect(onto.status, JSON.stringify(onto.body)).to.equal(400);
    expect(onto.body.issues).to.deep.equal([{ path: 'base_ref', message: 'stack cycle' }]);
    expect((await person.get(`${CR}/${own.number}`)).body.change_request.base_ref).to.equal('main');
  });

  it('a parent closed unmerged: its child says so and waits for a person', async () => {
    const open_ = (await person.get(`${CR}?status=open`)).body.change_requests as any[];
    const parent = open_.find((c) => c.head_ref === a.id);
    const child = open_.find((c) => c.head_ref === `${a.id}-5`);
    expect((await person.post(`${CR}/${parent.number}/close`, {})).status).to.equal(200);
    const s = await stackOf(child.number);
    expect(s.stack.map((e) => e.change_request.number)).to.deep.equal([parent.number, child.number]);
    expect(s.stack[1]!.note).to.match(/closed without merging.*waits for a person/);
    expect((await person.get(`${CR}/${child.number}`)).body.change_request).to.include({ status: 'open', base_ref: a.id });
    // Its stack does not merge past the closed parent: 409, nothing moves.
    const tipBefore = await tip(a.id);
    const refused = await person.post(`${CR}/${child.number}/merge`, { stack: true });
    expect(refused.status, JSON.stringify(refused.body)).to.equal(409);
    expect(refused.body.message).to.contain(`#${parent.number} below #${child.number} in its stack is closed`);
    expect(await tip(a.id)).to.equal(tipBefore);
    expect((await person.get(`${CR}/${child.number}`)).body.change_request.status).to.equal('open');

    // The CR page shows the parent (and the note) on the child, the children on the parent.
    await withPassword(srv);
    const cookie = await signInHttp(srv.url);
    const pageOf = async (n: number) => {
      const r = await dashFetch(srv.url, cookie, `/projects/stacks/change-requests/${n}`);
      expect(r.status).to.equal(200);
      return r.text;
    };
    const childPage = await pageOf(child.number);
    expect(childPage).to.match(new RegExp(`data-stack-parent>Stacked on <a href="[^"]*/change-requests/${parent.number}">#${parent.number}</a>`));
    expect(childPage).to.contain('data-stack-note').and.contain('closed without merging');
    expect(childPage, 'no stack merge past a closed parent').to.not.contain('class="merge-stack"');
    const parentPage = await pageOf(parent.number);
    expect(parentPage).to.match(new RegExp(`data-stack-children><li><a href="[^"]*/change-requests/${child.number}">#${child.number}</a>`));
  });

  it('the CR page merges the stack up to the CR shown, bound to the head it shows', async () => {
    await fetchMain();
    await w.commit({ 's1.txt': '1\n' }, 's1');
    await personPush('s1');
    await w.commit({ 's2.txt': '2\n' }, 's2');
    await personPush('s2');
    const s1 = await open(person, { title: 's1', head_ref: 's1' });
    const s2 = await open(person, { title: 's2', head_ref: 's2', base_ref: 's1' });
    await withPassword(srv);
    const cookie = await signInHttp(srv.url);
    const path = `/projects/stacks/change-requests/${s2.number}`;
    const page = (await dashFetch(srv.url, cookie, path)).text;
    expect(page).to.contain(`Merge the stack up to #${s2.number}`);
    const head = /class="merge-stack">.*?name="expected_head_sha" value="([0-9a-f]{40})"/s.exec(page)![1]!;
    expect(head).to.equal(await tip('s2'));
    const posted = await dashFetch(srv.url, cookie, `${path}/merge`, { form: { _csrf: csrfIn(page), expected_head_sha: head, stack: '1' } });
    expect(posted.status, posted.text).to.equal(303);
    const states = await Promise.all([s1, s2].map(async (c) => (await person.get(`${CR}/${c.number}`)).body.change_request));
    expect(states.map((c) => [c.status, c.base_ref])).to.deep.equal([['merged', 'main'], ['merged', 'main']]);
    expect(await tip('main')).to.equal(states[1].merge_commit_sha);
  });

  it('another agent\'s stack branch name is refused at push, and so is a 21st', async () => {
    await fetchMain();
    await w.commit({ 'theirs.txt': 't\n' }, 'theirs');
    for (const [ref, message] of [[`${b}-1`, AGENT_STACK_BRANCH_MESSAGE], [`${a.id}-21`, AGENT_BRANCH_MESSAGE], [`${a.id}-01`, AGENT_BRANCH_MESSAGE]] as const) {
      const r = await agentPush(ref);
      expect(r.code, ref).to.not.equal(0);
      expect(r.stderr, ref).to.contain(message);
      expect(await tip(ref), ref).to.equal(null);
    }
  });

  it('a merge whose process stopped before moving its stack: the next read of the stack moves it', async () => {
    // On the session branch as it is (its last CR was closed unmerged, so it is ahead of main).
    await w.ok(['fetch', '-q', authedUrl(repoUrl, srv.token), a.id]);
    await w.ok(['checkout', '-q', '-B', 'work', 'FETCH_HEAD']);
    await w.commit({ 'nine.txt': '9\n' }, 'nine');
    expect((await agentPush(a.id)).code).to.equal(0);
    await w.commit({ 'ten.txt': '10\n' }, 'ten');
    expect((await agentPush(`${a.id}-6`)).code).to.equal(0);
    const bottom = await open(agent, { title: 'nine', head_ref: a.id });
    const child = await open(agent, { title: 'ten', head_ref: `${a.id}-6`, base_ref: a.id });
    const clear = setFailpoint('merge.before-stack', () => {
      throw new Error('the process stopped here');
    });
    try {
      expect((await person.post(`${CR}/${bottom.number}/merge`, {})).status).to.equal(200);
    } finally {
      clear();
    }
    // Merged, and the child not moved yet: it still names the merged branch.
    expect((await person.get(`${CR}/${child.number}`)).body.change_request.base_ref).to.equal(a.id);
    const s = await stackOf(child.number);
    expect(s.stack.map((e) => [e.change_request.number, e.change_request.base_ref])).to.deep.equal([[child.number, 'main']]);
    expect((await events(child.number)).filter((e) => e.type === 'ChangeRequestRetargeted').map((e) => e.data.by)).to.deep.equal(['system']);
    expect(await files(child.number)).to.deep.equal(['ten.txt']);
  });

  it('a push during a stack merge stops the walk at that CR: the ones below stay merged, nothing of it lands', async () => {
    await fetchMain();
    await w.commit({ 'eleven.txt': '11\n' }, 'eleven');
    expect((await agentPush(a.id)).code).to.equal(0);
    await w.commit({ 'twelve.txt': '12\n' }, 'twelve');
    expect((await agentPush(`${a.id}-7`)).code).to.equal(0);
    await w.commit({ 'thirteen.txt': '13\n' }, 'thirteen');
    expect((await agentPush(`${a.id}-8`)).code).to.equal(0);
    const bottom = await open(agent, { title: 'eleven', head_ref: a.id });
    const middle = await open(agent, { title: 'twelve', head_ref: `${a.id}-7`, base_ref: a.id });
    const top = await open(agent, { title: 'thirteen', head_ref: `${a.id}-8`, base_ref: `${a.id}-7` });
    // Once the bottom has merged, the agent pushes to the middle's branch (a fast-forward).
    await w.ok(['checkout', '-q', '-B', 'late', `HEAD~1`]);
    await w.commit({ 'late.txt': 'unseen\n' }, 'late');
    let pushed = false;
    const clear = setFailpoint('merge.before-stack', async () => {
      if (pushed) return;
      pushed = true;
      const r = await agentPush(`${a.id}-7`);
      if (r.code !== 0) throw new Error(r.stderr);
    });
    let refused;
    try {
      refused = await person.post(`${CR}/${top.number}/merge`, { stack: true });
    } finally {
      clear();
    }
    expect(refused.status, JSON.stringify(refused.body)).to.equal(409);
    expect(refused.body.error).to.equal('Head branch was modified');
    const states = await Promise.all([bottom, middle, top].map(async (c) => (await person.get(`${CR}/${c.number}`)).body.change_request));
    expect(states.map((c) => [c.status, c.base_ref])).to.deep.equal([['merged', 'main'], ['open', 'main'], ['open', `${a.id}-7`]]);
    await fetchMain();
    expect((await w.run(['cat-file', '-e', 'HEAD:eleven.txt'])).code).to.equal(0);
    for (const f of ['twelve.txt', 'late.txt', 'thirteen.txt']) expect((await w.run(['cat-file', '-e', `HEAD:${f}`])).code, f).to.not.equal(0);
  });

  it('projections rebuild --verify is clean after all of it', async () => {
    const verify = await rebuildProjections(srv.db.db, { verify: true });
    expect(verify.differences).to.deep.equal([]);
  });
});
