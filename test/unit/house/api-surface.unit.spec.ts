import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../../../lib/paths.js';
import { resolved, specifiersOf, tsFilesUnder } from './layers.js';

/**
 * Routes hold no workflow: a file in api/ receives services (`ApiDeps.services`, built
 * once by the wiring in services/api-services/) and calls them. It never reaches the
 * database or the whole configuration through its dependencies, nor imports the git
 * engine, the database adapter or SQL: with those out of reach, a route cannot grow a
 * query or a repository workflow again. docs/development.md "A new route".
 */
const FORBIDDEN_MODULES: { rule: string; under: string }[] = [
  { rule: 'imports the git engine', under: 'infra/git/' },
  { rule: 'imports infra/db', under: 'infra/db/' },
  { rule: 'imports sql/', under: 'sql/' },
];

/**
 * What a route may not touch: the database or the whole configuration, on its dependencies
 * (`deps.db`, `const { db } = deps`) or on anything else it was handed (a service's own
 * dependencies, `s.config`): a route that holds either can hold a query or a workflow.
 */
const FORBIDDEN_MEMBERS = /\b(deps)\s*(?:\?\.|\.)\s*(db|config)\b|\??\.\s*(db|config)\b|\{[^{}]*\b(db|config)\b[^{}]*\}\s*=\s*deps\b/g;

/** The rules `source` (a file in api/) breaks, as `<rule>: <what>`; empty when it keeps them. */
export function surfaceViolations(file: string, source: string): string[] {
  if (!file.startsWith('api/')) return [];
  const out: string[] = [];
  for (const spec of specifiersOf(source)) {
    const target = resolved(file, spec);
    if (target === null) continue;
    for (const { rule, under } of FORBIDDEN_MODULES) if (target.startsWith(under)) out.push(`${rule}: ${spec}`);
  }
  for (const m of source.matchAll(FORBIDDEN_MEMBERS)) out.push(m[3] ? `touches .${m[3]}` : `touches deps.${m[2] ?? m[4]}`);
  return out;
}

/** Files allowed to break a rule anyway, each with why. An entry that no longer does fails the test. */
const ALLOWED: Record<string, string> = {};

/** The negative fixture: each file breaks one rule, and the check must say which. */
const BREAKS: Record<string, { source: string; rule: string }> = {
  'api/routes/a.ts': { source: "router.get('/', async (req, res) => res.json(await listThings(deps.db, req.params.id)));", rule: 'touches deps.db' },
  'api/dashboard/b.ts': { source: 'const limit = deps?.config.SVC_LIMIT;', rule: 'touches deps.config' },
  'api/routes/c.ts': { source: 'const { db, logger } = deps;', rule: 'touches deps.db' },
  'api/routes/c2.ts': { source: 'const cap = checkpointBodyLimit(sessionsOf(deps).config);', rule: 'touches .config' },
  'api/routes/c3.ts': { source: 'await settle(g.db, reservation);', rule: 'touches .db' },
  'api/d.ts': { source: "import { managedRepoPath } from '../infra/git/managed-repo.js';", rule: 'imports the git engine: ../infra/git/managed-repo.js' },
  'api/routes/e.ts': { source: "import type { RepoLocation } from '../../infra/git/port.js';", rule: 'imports the git engine: ../../infra/git/port.js' },
  'api/routes/f.ts': { source: "import type { Db } from '../../infra/db/db.js';", rule: 'imports infra/db: ../../infra/db/db.js' },
  'api/dashboard/g.ts': { source: "const pg = await import('../../infra/db/db.js');", rule: 'imports infra/db: ../../infra/db/db.js' },
  'api/h.ts': { source: "export { projectQueries } from '../sql/queries/projects.js';", rule: 'imports sql/: ../sql/queries/projects.js' },
};
const KEEPS: Record<string, string> = {
  'api/routes/x.ts': [
    "import type { ApiDeps } from '../deps.js';",
    "import { serializeApp } from '../../services/apps/deploy.js';",
    "import type { Checkpoint } from '../../infra/event-store.js';",
    'const rows = await deps.services.apps.list(project.project_id);',
    'const url = appOrigin(deps.settings, name, id, port);',
    '// deps.db is gone from api/: a comment may say so',
  ].join('\n'),
  // Outside api/ the rule does not apply: services are where the database is used.
  'services/x.ts': "import type { Db } from '../infra/db/db.js';\nconst r = await list(deps.db, id);",
};

describe('house: routes hold no workflow (api/ receives services, not the database or the git engine)', () => {
  it('fails on the negative fixture: every rule is reported where it is broken', () => {
    const found = Object.fromEntries(Object.entries(BREAKS).map(([f, { source }]) => [f, surfaceViolations(f, source)]));
    const expected = Object.fromEntries(Object.entries(BREAKS).map(([f, { rule }]) => [f, [rule]]));
    expect(found).to.deep.equal(expected);
  });

  it('passes files that keep the rules (comments, services, settings, other layers)', () => {
    // The comment is not code: strip line comments the way the checker sees the tree (below).
    const found = Object.fromEntries(Object.entries(KEEPS).map(([f, s]) => [f, surfaceViolations(f, withoutComments(s))]));
    expect(Object.values(found).flat()).to.deep.equal([]);
  });

  it('every file in api/ keeps the rules', () => {
    const files = tsFilesUnder('api');
    expect(files).to.include.members(['api/routes/git-http.ts', 'api/routes/projects.ts', 'api/deps.ts', 'api/auth.ts']);
    const found: Record<string, string[]> = {};
    for (const f of files) {
      const bad = surfaceViolations(f, withoutComments(readFileSync(path.join(projectRoot, f), 'utf8')));
      if (bad.length > 0 && !(f in ALLOWED)) found[f] = bad;
    }
    expect(found, 'api/ files that reach the database, the configuration, the git engine or SQL').to.deep.equal({});
    const stale = Object.keys(ALLOWED).filter((f) => surfaceViolations(f, withoutComments(readFileSync(path.join(projectRoot, f), 'utf8'))).length === 0);
    expect(stale, 'allow-list entries that no longer break a rule; remove them').to.deep.equal([]);
  });
});

/** Source without `//` line comments and `/* *\/` blocks (a comment may name what it no longer does). */
function withoutComments(source: string): string {
  return source.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`])\/\/.*$/gm, '$1');
}
