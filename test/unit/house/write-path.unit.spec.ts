import { expect } from 'chai';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../../../lib/paths.js';
import { LAYERS } from './layers.js';

/**
 * One write path: events reach the log only through the command handler's module
 * (infra/event-sourcing/), so every rule of appending (the expected version, the inline
 * projection in the same statement or transaction, group commit, the row cache) is kept
 * in one place. The append builders are what would let a file write around it: only that
 * module imports them (and the event store, which defines one of them).
 */
const BUILDERS = new Set(['appendStatement', 'append', 'appendAndPatch', 'encodeAppends']);
const HANDLER_MODULE = 'infra/event-sourcing/';

/** Files that may import a builder anyway, each with why. An entry that no longer does fails the test. */
const ALLOWED: Record<string, string> = {
  'bench/suites/events.ts': "the append bench measures the store's raw append as the handler's floor",
  'bench/suites/insights.ts': 'seeds 100k events fast, and measures the raw append with and without a reader catching the insights projection up',
};

/** Names a file imports by value (type-only imports cannot write), with the module they come from. */
export function valueImports(source: string): { name: string; from: string }[] {
  const out: { name: string; from: string }[] = [];
  for (const m of source.matchAll(/(?:import|export)\s+(type\s+)?(?:\w+\s*,\s*)?\{([^}]*)\}\s*from\s*['"]([^'"]+)['"]/g)) {
    if (m[1]) continue;
    for (const part of m[2]!.split(',')) {
      const spec = part.trim();
      if (!spec || spec.startsWith('type ')) continue;
      out.push({ name: spec.split(/\s+as\s+/)[0]!.trim(), from: m[3]! });
    }
  }
  // A whole module that holds builders, imported, re-exported or loaded at run time.
  for (const m of source.matchAll(/(?:import\s+\*\s+as\s+\w+\s+from|export\s+\*\s+from|import\()\s*['"]([^'"]+(?:event-store|queries\/events)\.js)['"]/g)) out.push({ name: '*', from: m[1]! });
  return out;
}

/** The builders `file` imports although it is not the handler's module: empty when it keeps the rule. */
export function writesAround(file: string, source: string): string[] {
  if (file.startsWith(HANDLER_MODULE) || file === 'infra/event-store.ts') return [];
  const bad = valueImports(source)
    .filter((i) => BUILDERS.has(i.name) || i.name === '*')
    .map((i) => `${i.name} from ${i.from}`);
  // The plain append statement itself, reached through the query object.
  if (/eventQueries\s*\.\s*append\b/.test(source)) bad.push('eventQueries.append');
  return bad;
}

function tsFilesUnder(dir: string): string[] {
  const abs = path.join(projectRoot, dir);
  if (!existsSync(abs)) return [];
  return readdirSync(abs, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && e.name.endsWith('.ts') && !e.name.endsWith('.d.ts'))
    .map((e) => path.relative(projectRoot, path.join(e.parentPath, e.name)).split(path.sep).join('/'));
}

/** The negative fixture: each file writes around the handler, and the rule must say so. */
const AROUND: Record<string, string> = {
  'services/x.ts': "import { append, readStream } from '../infra/event-store.js';",
  'services/checks/y.ts': "import {\n  appendStatement as build,\n  encodeAppends,\n} from '../../sql/queries/events.js';",
  'projections/x.ts': "import { appendAndPatch } from '../services/change-requests/command-path.js';",
  'sql/queries/x.ts': "import { appendStatement } from './events.js';",
  'workers/x.ts': "import { eventQueries } from '../sql/queries/events.js';\nawait tx.rows(eventQueries.append([]));",
  'api/x.ts': "import * as store from '../infra/event-store.js';",
  'ops/x.ts': "import pg, { append } from '../infra/event-store.js';",
  'projections/y.ts': "export { appendStatement } from '../sql/queries/events.js';",
  'services/z.ts': "export * from '../infra/event-store.js';\nconst q = await import('../sql/queries/events.js');",
};
const KEEPS: Record<string, string> = {
  'infra/event-sourcing/pg-store.ts': "import { appendStatement, encodeAppends } from '../../sql/queries/events.js';\nimport { append } from '../event-store.js';",
  'services/x.ts': "import { appendLog } from '../manifest/audit-log.js';\nimport { readStream, type StoredEvent } from '../../infra/event-store.js';",
  'sql/queries/x.ts': "import type { AppendExtension } from './events.js';\nimport { type appendStatement } from './events.js';",
  'projections/x.ts': "import { handle } from '../infra/event-sourcing/handler.js';",
};

describe('house: one write path (only the command handler module imports the append builders)', () => {
  it('fails on the negative fixture: every way around the handler is reported', () => {
    const found = Object.fromEntries(Object.entries(AROUND).map(([f, s]) => [f, writesAround(f, s)]));
    expect(Object.entries(found).filter(([, v]) => v.length === 0).map(([f]) => f), 'not reported').to.deep.equal([]);
    expect(found['services/checks/y.ts']).to.deep.equal(['appendStatement from ../../sql/queries/events.js', 'encodeAppends from ../../sql/queries/events.js']);
    expect(found['workers/x.ts']).to.deep.equal(['eventQueries.append']);
  });

  it('passes files that keep the rule', () => {
    expect(Object.entries(KEEPS).filter(([f, s]) => writesAround(f, s).length > 0).map(([f]) => f)).to.deep.equal([]);
  });

  it('the source tree appends only through infra/event-sourcing/', () => {
    const files = Object.keys(LAYERS).flatMap(tsFilesUnder);
    expect(files).to.include.members(['infra/event-sourcing/handler.ts', 'services/change-requests/handle.ts', 'services/sessions/handle.ts']);
    const found: Record<string, string[]> = {};
    for (const f of files) {
      const bad = writesAround(f, readFileSync(path.join(projectRoot, f), 'utf8'));
      if (bad.length) found[f] = bad;
    }
    const unexpected = Object.keys(found).filter((f) => !(f in ALLOWED));
    expect(Object.fromEntries(unexpected.map((f) => [f, found[f]])), 'files that append around the command handler').to.deep.equal({});
    expect(Object.keys(ALLOWED).filter((f) => !(f in found)), 'allow-list entries that no longer import a builder; remove them').to.deep.equal([]);
  });
});
