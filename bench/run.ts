#!/usr/bin/env node
/**
 * `npm run bench`: runs every suite in ./suites, prints one table, writes JSON to bench/results/.
 * `npm run bench -- events git` runs the named suites only; `--quick` shrinks the work.
 */
import { mkdir, readdir, writeFile } from 'node:fs/promises';
import { fileURLToPath, pathToFileURL } from 'node:url';
import path from 'node:path';
import { projectRoot } from '../lib/paths.js';
import type { BenchRow, BenchSuite } from './types.js';

/** Each `suites/<name>.js` exports `run: BenchSuite`; loaded lazily, only when asked for. */
async function discoverSuites(): Promise<Record<string, () => Promise<BenchSuite>>> {
  const dir = path.join(path.dirname(fileURLToPath(import.meta.url)), 'suites');
  const files = (await readdir(dir).catch(() => [] as string[])).filter((f) => f.endsWith('.js')).sort();
  return Object.fromEntries(
    files.map((f) => [
      f.replace(/\.js$/, ''),
      async () => ((await import(pathToFileURL(path.join(dir, f)).href)) as { run: BenchSuite }).run,
    ]),
  );
}

function fmt(n: number | undefined): string {
  if (n === undefined || Number.isNaN(n)) return '';
  if (Math.abs(n) >= 1000) return Math.round(n).toLocaleString('en-US');
  if (Math.abs(n) >= 10) return n.toFixed(1);
  return n.toFixed(2);
}

export function renderTable(rows: BenchRow[]): string {
  const header = ['suite', 'name', 'value', 'unit', 'floor', 'ratio', 'goal', 'met'];
  const body = rows.map((r) => [
    r.suite,
    r.name,
    fmt(r.value),
    r.unit,
    fmt(r.floor),
    r.ratio === undefined ? '' : `${r.ratio.toFixed(2)}x`,
    r.goal ?? '',
    r.met === undefined ? '' : r.met ? 'yes' : 'NO',
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((b) => b[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i]!)).join('  ').trimEnd();
  return [line(header), line(widths.map((w) => '-'.repeat(w))), ...body.map(line)].join('\n');
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const quick = args.includes('--quick');
  const wanted = args.filter((a) => !a.startsWith('--'));
  const suites = await discoverSuites();
  const names = wanted.length ? wanted : Object.keys(suites);
  const rows: BenchRow[] = [];
  for (const name of names) {
    const load = suites[name];
    if (!load) {
      process.stderr.write(`error: unknown bench suite '${name}' (have: ${Object.keys(suites).join(', ')})\n`);
      process.exit(2);
    }
    process.stderr.write(`bench: ${name}...\n`);
    const suite = await load();
    rows.push(...(await suite({ quick })));
  }
  process.stdout.write(renderTable(rows) + '\n');
  const dir = path.join(projectRoot, 'bench', 'results');
  await mkdir(dir, { recursive: true });
  const file = path.join(dir, `bench-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
  await writeFile(file, JSON.stringify({ recorded_at: new Date().toISOString(), node: process.version, rows }, null, 2));
  await writeFile(path.join(dir, 'latest.json'), JSON.stringify({ recorded_at: new Date().toISOString(), node: process.version, rows }, null, 2));
  process.stderr.write(`bench: wrote ${path.relative(process.cwd(), file)}\n`);
}

main().catch((err) => {
    process.stderr.write(`error: ${err instanceof Error ? err.stack : String(err)}\n`);
    process.exit(1);
  });
