import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../../../lib/paths.js';
import { manualClock, nowOf, systemClock } from '../../../lib/clock.js';
import { tsFilesUnder } from './layers.js';

/**
 * Wall-clock time reaches the server's rooms through one door, the `Clock` in the
 * dependencies (lib/clock.ts: `nowOf(deps)`), so a test that injects a time gets it
 * everywhere, and no "now" is read past its back. Durations and deadlines use the
 * monotonic `performance.now()` instead (a wall-clock step never ends a wait early).
 * So in these rooms neither `new Date()` without an argument nor `Date.now` appears.
 */
const SCANNED = ['services', 'infra', 'workers', 'projections'];

/**
 * Files still allowed to read the wall clock directly, each with why. An entry that no
 * longer does fails, so the list only shrinks; today nothing needs one.
 */
const ALLOWED: Record<string, string> = {};

/** `line: text` of every direct read of the wall clock in `source` (comments skipped). */
export function wallClockReadsOf(source: string): string[] {
  const out: string[] = [];
  source.split('\n').forEach((line, i) => {
    if (/^\s*(\*|\/\*)/.test(line)) return; // a doc comment
    const code = line.replace(/\/\/.*$/, '').replace(/'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"/g, "''");
    if (/\bnew\s+Date\s*\(\s*\)/.test(code) || /\bDate\s*\.\s*now\b/.test(code) || /\bnew\s+Date\b(?!\s*\()/.test(code)) out.push(`${i + 1}: ${line.trim()}`);
  });
  return out;
}

/** The negative fixture: each a way of reading the wall clock past the Clock. */
const READS: Record<string, string> = {
  'services/a.ts': 'const at = deps.now ? deps.now() : new Date();',
  'infra/b.ts': 'export function write(date = new Date()) {}',
  'workers/c.ts': 'const deadline = Date.now() + 5000;',
  'projections/d.ts': 'constructor(private readonly now: () => number = Date.now) {}',
  'services/e.ts': 'const at = new Date;',
  'infra/f.ts': 'const ms = Date . now ();',
};
/** What the rule lets through. */
const NO_READS: Record<string, string> = {
  'services/a.ts': 'const at = nowOf(deps);',
  'infra/b.ts': "const d = new Date(row.created_at); const e = new Date('2026-01-01T00:00:00Z');",
  'workers/c.ts': 'const deadline = performance.now() + 5000;',
  'services/d.ts': '// a comment saying new Date() is fine\n * and Date.now() in a doc comment too',
  'infra/e.ts': "log.info('Date.now() is not called here');",
};

describe('house: wall-clock time comes from the Clock in the dependencies', () => {
  it('fails on the negative fixture: every direct read is found', () => {
    for (const [file, src] of Object.entries(READS)) expect(wallClockReadsOf(src), file).to.have.length(1);
  });

  it('passes the Clock, dates made from a value, monotonic time and comments', () => {
    for (const [file, src] of Object.entries(NO_READS)) expect(wallClockReadsOf(src), file).to.deep.equal([]);
  });

  it('the source tree: no direct read in services/, infra/, workers/, projections/ outside the allow-list', () => {
    const files = SCANNED.flatMap(tsFilesUnder);
    expect(files).to.include.members(['services/change-requests/service.ts', 'infra/git/ref-cas.ts', 'workers/llm-ledger.ts']);
    const found: Record<string, string[]> = {};
    for (const f of files) {
      const reads = wallClockReadsOf(readFileSync(path.join(projectRoot, f), 'utf8'));
      if (reads.length > 0) found[f] = reads;
    }
    const unexpected = Object.fromEntries(Object.entries(found).filter(([f]) => !(f in ALLOWED)));
    expect(unexpected, 'read the time with nowOf(deps) (lib/clock.ts); a duration or deadline with performance.now()').to.deep.equal({});
    const stale = Object.keys(ALLOWED).filter((f) => !(f in found));
    expect(stale, 'allow-list entries that read the clock no more; remove them').to.deep.equal([]);
  });

  it('nowOf reads the injected clock, else the system one', () => {
    const clock = manualClock('2026-11-28T12:00:00Z');
    expect(nowOf({ now: clock.now }).toISOString()).to.equal('2026-11-28T12:00:00.000Z');
    clock.advance(1500);
    expect(nowOf(clock).toISOString()).to.equal('2026-11-28T12:00:01.500Z');
    const before = systemClock.now().getTime();
    const at = nowOf({}).getTime();
    expect(at).to.be.at.least(before).and.at.most(systemClock.now().getTime());
  });
});
