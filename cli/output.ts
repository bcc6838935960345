/** Shared output: color, TTY-aware tables, times, JSON. */
import { colorEnabled, type IOStreams } from './iostreams.js';
import type { Env } from './factory.js';

export interface Colors {
  enabled: boolean;
  bold(s: string): string;
  dim(s: string): string;
  red(s: string): string;
  green(s: string): string;
  yellow(s: string): string;
  cyan(s: string): string;
  magenta(s: string): string;
}

const sgr = (on: string, off: string) => (s: string) => `\x1b[${on}m${s}\x1b[${off}m`;
const id = (s: string) => s;

export function colors(io: IOStreams, env: Env, disabled = false): Colors {
  const enabled = !disabled && colorEnabled(io, env);
  return enabled
    ? { enabled, bold: sgr('1', '22'), dim: sgr('2', '22'), red: sgr('31', '39'), green: sgr('32', '39'), yellow: sgr('33', '39'), cyan: sgr('36', '39'), magenta: sgr('35', '39') }
    : { enabled, bold: id, dim: id, red: id, green: id, yellow: id, cyan: id, magenta: id };
}

const ANSI = /\x1b\[[0-9;]*m/g;
const width = (s: string) => [...s.replace(ANSI, '')].length;

/**
 * gh's table printer: on a TTY, a header row and aligned columns; piped, no header and
 * tab-separated fields, so `cut -f` and `awk -F'\t'` work.
 */
export function printTable(io: IOStreams, header: string[], rows: string[][], c?: Colors): void {
  if (!io.stdoutIsTTY) {
    for (const r of rows) io.out.write(r.map((cell) => cell.replace(/[\t\n]/g, ' ')).join('\t') + '\n');
    return;
  }
  const all = [header, ...rows];
  const widths = header.map((_, i) => Math.max(...all.map((r) => width(r[i] ?? ''))));
  const line = (r: string[]) =>
    r
      .map((cell, i) => (i === r.length - 1 ? cell : cell + ' '.repeat(widths[i]! - width(cell))))
      .join('  ')
      .trimEnd();
  const head = line(header.map((h) => h.toUpperCase()));
  io.out.write((c ? c.bold(head) : head) + '\n');
  for (const r of rows) io.out.write(line(r) + '\n');
}

/** "3 minutes ago" on a TTY, the ISO time when piped. */
export function formatTime(io: IOStreams, iso: string | null | undefined, now: Date): string {
  if (!iso) return '';
  return io.stdoutIsTTY ? relativeTime(new Date(iso), now) : iso;
}

export function relativeTime(t: Date, now: Date): string {
  const s = Math.round((now.getTime() - t.getTime()) / 1000);
  if (Number.isNaN(s)) return '';
  if (s < 0) return 'in the future';
  if (s < 60) return 'less than a minute ago';
  const units: Array<[number, string]> = [
    [60 * 60 * 24 * 365, 'year'],
    [60 * 60 * 24 * 30, 'month'],
    [60 * 60 * 24, 'day'],
    [60 * 60, 'hour'],
    [60, 'minute'],
  ];
  for (const [size, name] of units) {
    const n = Math.floor(s / size);
    if (n >= 1) return n === 1 ? `about 1 ${name} ago` : `about ${n} ${name}s ago`;
  }
  return '';
}

export function printJson(io: IOStreams, value: unknown): void {
  io.out.write(JSON.stringify(value, null, 2) + '\n');
}

export const shortSha = (sha: string | null | undefined) => (sha ? sha.slice(0, 7) : '');
