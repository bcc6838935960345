import { expect } from 'chai';
import { ApiClient } from '../../../cli/api-client.js';
import { withProject } from '../../support/server.js';

const nextOf = (link: string | null) => (link ? /<([^>]+)>; rel="next"/.exec(link)?.[1] ?? null : null);

describe('lists: cursor pagination and refresh on list', function () {
  this.timeout(120_000);

  it('250 CRs: Link rel="next" and next_cursor walk each exactly once, newest first; the CLI client follows pages to --limit', () =>
    withProject({ slug: 'pages' }, async ({ srv, repo, api, base }) => {
      await repo.commit('topic', { 'a.txt': 'a\n' });
      for (let i = 0; i < 250; i += 25) {
        const rs = await Promise.all(Array.from({ length: 25 }, (_, j) => api.post(base, { title: `CR ${i + j}`, head_ref: 'topic' })));
        expect(rs.every((r) => r.status === 201)).to.equal(true);
      }
      // Following Link headers, 100 a page.
      const seen: number[] = [];
      let url: string | null = `${srv.url}${base}?per_page=100`;
      let pages = 0;
      while (url) {
        const res = await fetch(url, { headers: { authorization: `Bearer ${srv.token}` } });
        expect(res.status).to.equal(200);
        const body = (await res.json()) as { change_requests: { number: number }[]; next_cursor: string | null };
        seen.push(...body.change_requests.map((c) => c.number));
        url = nextOf(res.headers.get('link'));
        expect(url === null).to.equal(body.next_cursor === null);
        pages++;
      }
      expect(pages).to.equal(3);
      expect(seen).to.deep.equal(Array.from({ length: 250 }, (_, i) => 250 - i));

      // Following next_cursor, default page size (30), with a status filter.
      const again: number[] = [];
      let cursor: string | null = null;
      do {
        const r: { body: any } = await api.get(`${base}?status=open${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
        expect(r.body.change_requests.length).to.be.at.most(30);
        again.push(...r.body.change_requests.map((c: { number: number }) => c.number));
        cursor = r.body.next_cursor;
      } while (cursor);
      expect(new Set(again).size).to.equal(250);
      expect(again.length).to.equal(250);

      for (const bad of ['per_page=0', 'per_page=101', 'cursor=not-a-cursor', 'cursor=eyJiIjotMX0']) {
        expect((await api.get(`${base}?${bad}`)).status, bad).to.equal(400);
      }

      const cli = new ApiClient({ baseUrl: srv.url, token: srv.token, fetch: globalThis.fetch as never });
      expect((await cli.listChangeRequests('pages', 'all')).length, 'default --limit 30').to.equal(30);
      const many = await cli.listChangeRequests('pages', 'all', 240);
      expect(many.map((c) => c.number)).to.deep.equal(Array.from({ length: 240 }, (_, i) => 250 - i));
      expect((await cli.listChangeRequests('pages', 'open', 1000)).length).to.equal(250);
    }));

  it('projects paginate too', () =>
    withProject({ slug: 'p0' }, async ({ repo, api }) => {
      for (let i = 1; i < 35; i++) expect((await api.post('/v1/projects', { name: `p${i}`, repo_url: repo.url })).status).to.equal(201);
      const first = await api.get('/v1/projects?per_page=20');
      expect(first.body.projects.length).to.equal(20);
      const second = await api.get(`/v1/projects?per_page=20&cursor=${first.body.next_cursor}`);
      expect(second.body.projects.length).to.equal(15);
      expect(second.body.next_cursor).to.equal(null);
      const ids = [...first.body.projects, ...second.body.projects].map((p: { project_id: string }) => p.project_id);
      expect(new Set(ids).size).to.equal(35);
    }));

  it('a list refreshes the open CRs whose branches moved: one Refreshed event each, the list shows the new SHAs', () =>
    withProject({ slug: 'list-refresh' }, async ({ srv, repo, api, base }) => {
      const heads: string[] = [];
      for (let i = 0; i < 4; i++) {
        heads.push(await repo.commit(`t${i}`, { [`t${i}.txt`]: 'x\n' }));
        await api.post(base, { title: `T${i}`, head_ref: `t${i}` });
      }
      await api.post(`${base}/4/close`);
      const moved1 = await repo.commit('t1', { 't1.txt': 'y\n' });
      const moved2 = await repo.commit('t2', { 't2.txt': 'y\n' });
      await repo.commit('t3', { 't3.txt': 'y\n' }); // closed: not refreshed
      const list = (await api.get(base)).body.change_requests as { number: number; head_commit_sha: string }[];
      const byNumber = new Map(list.map((c) => [c.number, c.head_commit_sha]));
      expect(byNumber.get(1)).to.equal(heads[0]);
      expect(byNumber.get(2)).to.equal(moved1);
      expect(byNumber.get(3)).to.equal(moved2);
      expect(byNumber.get(4)).to.equal(heads[3]);
      const refreshed = await srv.db.db.rows<{ stream_id: string }>({
        text: "SELECT stream_id FROM events WHERE type = 'ChangeRequestRefreshed' ORDER BY stream_id",
        values: [],
      });
      expect(refreshed.length).to.equal(2);
      // Stored too: a second list appends nothing.
      await api.get(base);
      expect((await srv.db.db.rows({ text: "SELECT 1 FROM events WHERE type = 'ChangeRequestRefreshed'", values: [] })).length).to.equal(2);
      expect((await api.get(`${base}/2`)).body.change_request.head_commit_sha).to.equal(moved1);
    }));
});
