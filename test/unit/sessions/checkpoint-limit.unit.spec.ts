import { expect } from 'chai';
import { CheckpointLimiter } from '../../../services/sessions/checkpoint-limit.js';

describe('checkpoint rate limit (per session bucket)', () => {
  it('lets a burst through, then answers the seconds to wait, and refills one every interval', () => {
    let now = 1_000_000;
    const l = new CheckpointLimiter({ burst: 3, everyMs: 10_000, maxKeys: 100 }, () => now);
    expect([l.take('a'), l.take('a'), l.take('a')]).to.deep.equal([0, 0, 0]);
    expect(l.take('a')).to.equal(10);
    now += 4_000;
    expect(l.take('a')).to.equal(6);
    now += 6_000;
    expect(l.take('a')).to.equal(0);
    expect(l.take('a')).to.equal(10);
  });

  it("keeps sessions apart: one session's burst does not spend another's", () => {
    const l = new CheckpointLimiter({ burst: 1, everyMs: 60_000, maxKeys: 100 }, () => 0);
    expect(l.take('a')).to.equal(0);
    expect(l.take('a')).to.be.greaterThan(0);
    expect(l.take('b')).to.equal(0);
  });

  it('forgets the least recently used session past maxKeys (it starts full again, never stricter)', () => {
    const l = new CheckpointLimiter({ burst: 1, everyMs: 60_000, maxKeys: 2 }, () => 0);
    expect(l.take('a')).to.equal(0);
    expect(l.take('b')).to.equal(0);
    expect(l.take('c')).to.equal(0); // 'a' forgotten
    expect(l.take('a')).to.equal(0);
    expect(l.take('c')).to.be.greaterThan(0);
  });
});
