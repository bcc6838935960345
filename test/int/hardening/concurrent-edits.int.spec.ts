import { expect } from 'chai';
import { withProject } from '../../support/server.js';

describe('concurrent edits are retried on the server', function () {
  this.timeout(60_000);

  it('50 parallel PATCHes of one CR: all 200, the last write visible, the stream contiguous', () =>
    withProject({ slug: 'edits' }, async ({ srv, repo, api, base }) => {
      await repo.commit('topic', { 'a.txt': 'a\n' });
      const cr = (await api.post(base, { title: 'Start', head_ref: 'topic' })).body.change_request;
      const titles = Array.from({ length: 50 }, (_, i) => `Edit ${i}`);
      const rs = await Promise.all(titles.map((title, i) => api.patch(`${base}/${cr.number}`, { title, description: `d${i}` })));
      expect(rs.map((r) => r.status), JSON.stringify(rs.find((r) => r.status !== 200)?.body)).to.deep.equal(Array(50).fill(200));
      const events = await srv.db.db.rows<{ stream_position: number; type: string; data: { title?: string } }>({
        text: 'SELECT stream_position, type, data FROM events WHERE stream_id = $1 ORDER BY stream_position',
        values: [`cr-${cr.cr_id}`],
      });
      expect(events.map((e) => e.stream_position)).to.deep.equal(Array.from({ length: 51 }, (_, i) => i + 1));
      const edits = events.filter((e) => e.type === 'ChangeRequestEdited');
      expect(edits.map((e) => e.data.title).sort()).to.deep.equal([...titles].sort());
      const now = (await api.get(`${base}/${cr.number}`)).body.change_request;
      expect(now.title).to.equal(edits[edits.length - 1]!.data.title);
    }));
});
