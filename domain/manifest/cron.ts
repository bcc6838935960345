/**
 * Five-field cron (`minute hour day-of-month month day-of-week`), evaluated in the
 * process's local time zone (the server's, `TZ`). Numbers, `*`, ranges `a-b`, steps
 * `*\/n` and `a-b/n`, lists, month and day names; 0 and 7 are Sunday. When both
 * day-of-month and day-of-week are restricted, either matching is enough (Vixie cron).
 * A local time skipped by a DST change never fires.
 */
export interface Cron {
  minutes: Set<number>;
  hours: Set<number>;
  days: Set<number>;
  months: Set<number>;
  weekdays: Set<number>;
  dayRestricted: boolean;
  weekdayRestricted: boolean;
}

const MONTHS = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'];
const DAYS = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'];

export class CronError extends Error {}

function field(text: string, min: number, max: number, names: string[] = [], nameBase = 0): Set<number> {
  const out = new Set<number>();
  const value = (s: string): number => {
    const idx = names.indexOf(s.toUpperCase());
    if (idx >= 0) return idx + nameBase;
    if (!/^\d{1,2}$/.test(s)) throw new CronError(`'${s}' is not a number`);
    const n = Number(s);
    if (n < min || n > max) throw new CronError(`${n} is outside ${min}-${max}`);
    return n;
  };
  for (const part of text.split(',')) {
    const m = /^([^/]+)(?:\/(\d{1,2}))?$/.exec(part);
    if (!m) throw new CronError(`'${part}' is not a cron term`);
    const step = m[2] === undefined ? 1 : Number(m[2]);
    if (step < 1) throw new CronError('a step must be at least 1');
    let lo: number;
    let hi: number;
    if (m[1] === '*') [lo, hi] = [min, max];
    else if (m[1]!.includes('-')) {
      const [a, b, extra] = m[1]!.split('-');
      if (extra !== undefined || !a || !b) throw new CronError(`'${m[1]}' is not a range`);
      [lo, hi] = [value(a), value(b)];
      if (lo > hi) throw new CronError(`range ${m[1]} runs backwards`);
    } else {
      lo = value(m[1]!);
      hi = m[2] === undefined ? lo : max;
    }
    for (let i = lo; i <= hi; i += step) out.add(i);
  }
  return out;
}

export function parseCron(expr: string): Cron {
  const parts = expr.trim().split(/\s+/);
  if (parts.length !== 5) throw new CronError(`a schedule has 5 fields (minute hour day month weekday), got ${parts.length}`);
  const [mi, h, d, mo, wd] = parts as [string, string, string, string, string];
  const weekdays = field(wd, 0, 7, DAYS);
  if (weekdays.delete(7)) weekdays.add(0);
  return {
    minutes: field(mi, 0, 59),
    hours: field(h, 0, 23),
    days: field(d, 1, 31),
    months: field(mo, 1, 12, MONTHS, 1),
    weekdays,
    dayRestricted: d !== '*',
    weekdayRestricted: wd !== '*',
  };
}

/** The first whole minute strictly after `after` that matches, or null within ~5 years. */
export function nextFire(c: Cron, after: Date): Date | null {
  const t = new Date(Math.floor(after.getTime() / 60_000) * 60_000 + 60_000);
  const limit = after.getTime() + 5 * 366 * 86_400_000;
  while (t.getTime() <= limit) {
    if (!c.months.has(t.getMonth() + 1) || !dayOk(c, t)) {
      t.setDate(t.getDate() + 1);
      t.setHours(0, 0, 0, 0);
      continue;
    }
    if (!c.hours.has(t.getHours())) {
      t.setHours(t.getHours() + 1, 0, 0, 0);
      continue;
    }
    if (c.minutes.has(t.getMinutes())) return new Date(t);
    t.setTime(t.getTime() + 60_000);
  }
  return null;
}

function dayOk(c: Cron, t: Date): boolean {
  const dom = c.days.has(t.getDate());
  const dow = c.weekdays.has(t.getDay());
  if (c.dayRestricted && c.weekdayRestricted) return dom || dow;
  return dom && dow;
}
