import { expect } from 'chai';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../../../lib/paths.js';

/**
 * docs/hardening.md's threat model names, for each principal, the test that attacks it.
 * This spec keeps the table honest: every named spec file exists
 * and holds a test (or describe) of exactly that title, so a renamed or deleted test fails
 * here instead of leaving the document pointing at nothing.
 */

export interface NamedTest {
  file: string;
  title: string;
}

export interface ThreatRow {
  principal: string;
  tests: NamedTest[];
  text: string;
}

/** The rows of the tables under `## Threat model` (the principals', then its parts' such as Availability), headers and separators left out. */
export function threatModelRows(markdown: string): ThreatRow[] {
  const start = markdown.indexOf('\n## Threat model\n');
  if (start < 0) throw new Error('docs/hardening.md has no "## Threat model" section');
  const end = markdown.indexOf('\n## ', start + 1);
  const lines = markdown.slice(start, end < 0 ? undefined : end).split('\n').filter((l) => l.startsWith('|'));
  const separator = (l: string | undefined) => l !== undefined && /^\|(\s*:?-{3,}:?\s*\|)+$/.test(l);
  return lines.filter((l, i) => !separator(l) && !separator(lines[i + 1])).map((line) => {
    // A `\|` inside a cell is text, not a column break.
    const cells = line.slice(1, -1).split(/(?<!\\)\|/).map((c) => c.trim());
    const last = cells[cells.length - 1] ?? '';
    const tests = [...last.matchAll(/`(test\/[^`]+\.ts)` “([^”]+)”/g)].map((m) => ({ file: m[1]!, title: m[2]! }));
    return { principal: cells[0] ?? '', tests, text: line };
  });
}

/** Titles of `it`, `describe` and `context` calls in a source file (string literals, escapes undone). */
export function titlesIn(source: string): Set<string> {
  const titles = new Set<string>();
  for (const m of source.matchAll(/\b(?:it|describe|context)\(\s*(['"`])((?:\\.|(?!\1)[^\\])*)\1/g)) {
    titles.add(m[2]!.replace(/\\(.)/g, '$1'));
  }
  return titles;
}

/** A spec's titles, with those of the files it imports by relative path (a shared suite). */
function titlesOfSpec(root: string, file: string): Set<string> {
  const abs = path.join(root, file);
  const source = readFileSync(abs, 'utf8');
  const titles = titlesIn(source);
  for (const m of source.matchAll(/from '(\.{1,2}\/[^']+)\.js'/g)) {
    const dep = path.resolve(path.dirname(abs), `${m[1]}.ts`);
    if (existsSync(dep)) for (const t of titlesIn(readFileSync(dep, 'utf8'))) titles.add(t);
  }
  return titles;
}

/** Every problem with the table: a row without a test, a missing file, a title not in its file. */
export function threatModelProblems(root: string, markdown: string): string[] {
  const problems: string[] = [];
  const rows = threatModelRows(markdown);
  if (rows.length === 0) problems.push('the threat model table has no rows');
  for (const row of rows) {
    if (row.tests.length === 0) problems.push(`row "${row.principal}" names no test`);
    for (const t of row.tests) {
      if (!existsSync(path.join(root, t.file))) {
        problems.push(`row "${row.principal}": ${t.file} does not exist`);
        continue;
      }
      if (!titlesOfSpec(root, t.file).has(t.title)) problems.push(`row "${row.principal}": ${t.file} has no test titled "${t.title}"`);
    }
  }
  return problems;
}

describe('docs/hardening.md threat model', () => {
  const doc = readFileSync(path.join(projectRoot, 'docs', 'hardening.md'), 'utf8');

  it('every test the table names exists, with that exact title', () => {
    expect(threatModelProblems(projectRoot, doc)).to.deep.equal([]);
  });

  it('covers every principal of the threat model, each row naming a test; the kubernetes row says it is not exercisable here', () => {
    const rows = threatModelRows(doc);
    const principals = rows.map((r) => r.principal).join('\n');
    for (const p of [
      'A sandbox: its network',
      "A sandbox: the host's ports",
      'A sandbox: another sandbox',
      "A sandbox: the server's sockets",
      'A preview page',
      '`SVC_CLI_TOKEN`',
      '`SVC_TOKEN`',
      'a clone credential',
      '`SVC_LLM_API_KEY`',
      'A project token a user minted',
      'A user token',
      'The dashboard cookie',
      "A repository's own hooks and config",
    ]) {
      expect(principals, p).to.include(p);
    }
    // Availability: one row per bound a sandbox meets, each naming its test.
    for (const b of ['connections to its gateway socket', 'connections to its egress socket', 'requests in flight', 'request rate', 'file descriptors', 'a child process it cannot start', "A sandbox's processes: open files", "A sandbox's processes: processes", "A sandbox's memory", "A sandbox's CPU"]) {
      expect(principals, b).to.include(b);
    }
    const k8s = rows.find((r) => r.principal.includes('kubernetes'));
    expect(k8s?.text).to.include('Not exercisable here');
    expect(k8s?.tests.map((t) => t.file)).to.deep.equal(['test/unit/ops/helm-chart.unit.spec.ts']);
  });

  it('the check fails on a title or file that does not exist, and on a row without a test', () => {
    const table = (cell: string) =>
      `# x\n\n## Threat model\n\n| Principal | Can | Cannot | Test |\n|---|---|---|---|\n| P | a | b \\| c | ${cell} |\n\n## Next\n`;
    expect(threatModelProblems(projectRoot, table('`test/unit/house/threat-model.unit.spec.ts` “no test has this title”'))).to.deep.equal([
      'row "P": test/unit/house/threat-model.unit.spec.ts has no test titled "no test has this title"',
    ]);
    expect(threatModelProblems(projectRoot, table('`test/unit/house/missing.unit.spec.ts` “x”'))).to.deep.equal([
      'row "P": test/unit/house/missing.unit.spec.ts does not exist',
    ]);
    expect(threatModelProblems(projectRoot, table('none'))).to.deep.equal(['row "P" names no test']);
    // A part's own table (### Availability) is read the same way: its header is no row.
    const parts = table('`test/unit/house/threat-model.unit.spec.ts` “every test the table names exists, with that exact title”').replace('\n\n## Next', '\n\n### Part\n\n| Bound | Gets | Past it | Test |\n|---|---|---|---|\n| B | x | y | none |\n\n## Next');
    expect(threatModelProblems(projectRoot, parts)).to.deep.equal(['row "B" names no test']);
    expect(threatModelProblems(projectRoot, table('`test/unit/house/threat-model.unit.spec.ts` “covers every principal of the threat model, each row naming a test; the kubernetes row says it is not exercisable here”'))).to.deep.equal([]);
  });
});
