import { expect } from 'chai';
import { segmentsOf } from '../../../services/insights/service.js';

/**
 * An insights window is read from whole hours, whole minutes and the facts at its edges:
 * the segments cover [lo, hi) exactly once, in order, each bucket segment on its unit.
 */
describe('insights: a window cut into hours, minutes and facts', () => {
  const at = (s: string) => new Date(s);

  it('covers every window exactly once, buckets aligned to their unit', () => {
    let seed = 7;
    const rnd = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    for (let i = 0; i < 2000; i++) {
      const lo = Date.UTC(2026, 2, 1) + Math.floor(rnd() * 5 * 86_400_000);
      const hi = lo + Math.floor(rnd() ** 3 * 3 * 86_400_000);
      const segs = segmentsOf({ lo: new Date(lo), hi: new Date(hi) });
      if (hi <= lo) {
        expect(segs).to.deep.equal([]);
        continue;
      }
      expect(segs[0]!.from.getTime()).to.equal(lo);
      expect(segs[segs.length - 1]!.to.getTime()).to.equal(hi);
      for (const [k, s] of segs.entries()) {
        expect(s.from.getTime()).to.be.below(s.to.getTime());
        if (k > 0) expect(s.from.getTime()).to.equal(segs[k - 1]!.to.getTime());
        const unit = s.source === 'hour' ? 3_600_000 : s.source === 'minute' ? 60_000 : 0;
        if (unit) expect([s.from.getTime() % unit, s.to.getTime() % unit]).to.deep.equal([0, 0]);
        if (s.source === 'facts') expect(s.to.getTime() - s.from.getTime()).to.be.below(60_000);
      }
      expect(segs.filter((s) => s.source === 'hour').length).to.be.at.most(1);
    }
  });

  it('a window of days: its middle from hours, minutes around it, facts only under a minute at each edge', () => {
    expect(segmentsOf({ lo: at('2026-03-01T10:20:30.500Z'), hi: at('2026-03-03T08:05:07.250Z') }).map((s) => [s.source, s.from.toISOString(), s.to.toISOString()])).to.deep.equal([
      ['facts', '2026-03-01T10:20:30.500Z', '2026-03-01T10:21:00.000Z'],
      ['minute', '2026-03-01T10:21:00.000Z', '2026-03-01T11:00:00.000Z'],
      ['hour', '2026-03-01T11:00:00.000Z', '2026-03-03T08:00:00.000Z'],
      ['minute', '2026-03-03T08:00:00.000Z', '2026-03-03T08:05:00.000Z'],
      ['facts', '2026-03-03T08:05:00.000Z', '2026-03-03T08:05:07.250Z'],
    ]);
    expect(segmentsOf({ lo: at('2026-03-01T10:20:30Z'), hi: at('2026-03-01T10:20:50Z') }).map((s) => s.source)).to.deep.equal(['facts']);
  });
});
