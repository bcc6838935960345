import { expect } from 'chai';
import { colorEnabled, pagerCommand } from '../../cli/iostreams.js';
import { colors, formatTime, printTable, relativeTime } from '../../cli/output.js';
import { colorize } from '../../cli/commands/cr/diff.js';
import { testIO } from './helpers.js';

describe('cli output', () => {
  describe('color', () => {
    const tty = testIO({ tty: true }).io;
    const pipe = testIO({ tty: false }).io;
    it('is on for a TTY and off for a pipe by default', () => {
      expect(colorEnabled(tty, {})).to.equal(true);
      expect(colorEnabled(pipe, {})).to.equal(false);
    });
    it('NO_COLOR turns it off, even with CLICOLOR_FORCE', () => {
      expect(colorEnabled(tty, { NO_COLOR: '1' })).to.equal(false);
      expect(colorEnabled(pipe, { NO_COLOR: '1', CLICOLOR_FORCE: '1' })).to.equal(false);
    });
    it('an empty NO_COLOR does not count', () => {
      expect(colorEnabled(tty, { NO_COLOR: '' })).to.equal(true);
    });
    it('CLICOLOR_FORCE turns it on for a pipe; CLICOLOR_FORCE=0 does not', () => {
      expect(colorEnabled(pipe, { CLICOLOR_FORCE: '1' })).to.equal(true);
      expect(colorEnabled(pipe, { CLICOLOR_FORCE: '0' })).to.equal(false);
    });
    it('CLICOLOR=0 turns it off on a TTY', () => {
      expect(colorEnabled(tty, { CLICOLOR: '0' })).to.equal(false);
      expect(colorEnabled(tty, { CLICOLOR: '1' })).to.equal(true);
    });
    it('an explicit --no-color beats everything', () => {
      expect(colors(tty, { CLICOLOR_FORCE: '1' }, true).enabled).to.equal(false);
    });
    it('colorizes a diff by line kind', () => {
      const c = colors(tty, {});
      const out = colorize('diff --git a/x b/x\n@@ -1 +1 @@\n-old\n+new\n ctx', c);
      expect(out).to.equal('\x1b[1mdiff --git a/x b/x\x1b[22m\n\x1b[36m@@ -1 +1 @@\x1b[39m\n\x1b[31m-old\x1b[39m\n\x1b[32m+new\x1b[39m\n ctx');
    });
  });

  describe('pager', () => {
    it('SVC_PAGER beats PAGER; empty or cat means none; default less', () => {
      expect(pagerCommand({ SVC_PAGER: 'more', PAGER: 'less' })).to.equal('more');
      expect(pagerCommand({ PAGER: 'most' })).to.equal('most');
      expect(pagerCommand({ SVC_PAGER: '' , PAGER: 'less'})).to.equal(undefined);
      expect(pagerCommand({ PAGER: 'cat' })).to.equal(undefined);
      expect(pagerCommand({})).to.equal('less');
    });
  });

  describe('tables', () => {
    const rows = [
      ['1', 'First', 'open'],
      ['12', 'Second title', 'merged'],
    ];
    it('on a TTY: upper-case header, aligned columns', () => {
      const t = testIO({ tty: true });
      printTable(t.io, ['#', 'title', 'status'], rows);
      expect(t.stdout()).to.equal('#   TITLE         STATUS\n1   First         open\n12  Second title  merged\n');
    });
    it('piped: no header, tab-separated, tabs and newlines in cells flattened', () => {
      const t = testIO({ tty: false });
      printTable(t.io, ['#', 'title', 'status'], [...rows, ['3', 'a\tb\nc', 'open']]);
      expect(t.stdout()).to.equal('1\tFirst\topen\n12\tSecond title\tmerged\n3\ta b c\topen\n');
    });
    it('aligns colored cells by their visible width', () => {
      const t = testIO({ tty: true });
      const c = colors(t.io, {});
      printTable(t.io, ['a', 'b'], [[c.green('xx'), 'y'], ['x', 'z']]);
      const lines = t.stdout().split('\n');
      expect(lines[1]).to.equal(`${c.green('xx')}  y`);
      expect(lines[2]).to.equal('x   z');
    });
  });

  describe('times', () => {
    const now = new Date('2026-01-01T12:00:00Z');
    it('relative on a TTY, ISO when piped', () => {
      expect(formatTime(testIO({ tty: true }).io, '2026-01-01T11:57:00Z', now)).to.equal('about 3 minutes ago');
      expect(formatTime(testIO({ tty: false }).io, '2026-01-01T11:57:00Z', now)).to.equal('2026-01-01T11:57:00Z');
    });
    it('reads naturally', () => {
      expect(relativeTime(new Date('2026-01-01T11:59:30Z'), now)).to.equal('less than a minute ago');
      expect(relativeTime(new Date('2026-01-01T11:00:00Z'), now)).to.equal('about 1 hour ago');
      expect(relativeTime(new Date('2025-12-30T12:00:00Z'), now)).to.equal('about 2 days ago');
    });
  });
});
