import { expect } from 'chai';
import { CronError, nextFire, parseCron } from '../../../domain/manifest/cron.js';

// Local time: the server's time zone. Built with local constructors so the test holds in any TZ.
const local = (y: number, mo: number, d: number, h = 0, mi = 0) => new Date(y, mo - 1, d, h, mi);

describe('cron (5 fields, server time zone)', () => {
  const cases: Array<[string, Date, Date]> = [
    ['* * * * *', local(2026, 1, 1, 10, 0), local(2026, 1, 1, 10, 1)],
    ['*/15 * * * *', local(2026, 1, 1, 10, 7), local(2026, 1, 1, 10, 15)],
    ['0 3 * * *', local(2026, 1, 1, 3, 0), local(2026, 1, 2, 3, 0)],
    ['30 9 * * MON-FRI', local(2026, 1, 3, 12, 0), local(2026, 1, 5, 9, 30)], // Sat -> Mon
    ['0 0 1 JAN *', local(2026, 6, 1), local(2027, 1, 1)],
    ['0 12 13 * 5', local(2026, 1, 1), local(2026, 1, 2, 12, 0)], // day 13 OR Friday: Fri 2 Jan
    ['0 0 29 2 *', local(2026, 3, 1), local(2028, 2, 29)],
    ['5,10 1-2 * * 7', local(2026, 1, 4, 1, 6), local(2026, 1, 4, 1, 10)], // 7 = Sunday
  ];
  for (const [expr, after, want] of cases) {
    it(`${expr} after ${after.toString().slice(0, 21)}`, () => {
      expect(nextFire(parseCron(expr), after)!.getTime()).to.equal(want.getTime());
    });
  }

  it('refuses malformed schedules', () => {
    for (const bad of ['* * * *', '60 * * * *', '* 24 * * *', '* * 0 * *', '*/0 * * * *', '5-1 * * * *', 'a b c d e', '* * * 13 *']) {
      expect(() => parseCron(bad), bad).to.throw(CronError);
    }
  });
});
