import { expect } from 'chai';
import { readdirSync, readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import path from 'node:path';
import { projectRoot } from '../../../lib/paths.js';

/**
 * The house rules (docs: /work/shared/design/style.md), checked on the source tree so they
 * cannot regress:
 * - `api/` (routes, dashboard, feed hub, project access, auth) calls services in `infra/`;
 *   it never imports `sql/queries/*` (SQL lives behind services) nor `workers/*` (job
 *   handlers; their queue names live in `infra/`).
 * - `domain/` is pure: it imports only `domain/`, node builtins and zod.
 */

/**
 * api files still allowed to break the api rule, each with why. Empty: every api module
 * goes through services. An entry that no longer breaks the rule fails the test, so the
 * list only shrinks.
 */
const API_ALLOWED: Record<string, string> = {};

/**
 * Packages a domain file may import beyond node builtins and zod, each with why. An entry
 * that is no longer used fails the test.
 */
const DOMAIN_ALLOWED: Record<string, string[]> = {
  // svc.toml is parsed and edited in the domain (pure string in, value out); smol-toml is a
  // pure TOML parser without I/O. Moving the TOML step to infra is a separate change.
  'domain/manifest/parse.ts': ['smol-toml'],
  'domain/manifest/edit.ts': ['smol-toml'],
};

/** Every module specifier of a TypeScript source: static and type imports, re-exports, side-effect and dynamic imports. */
export function specifiersOf(source: string): string[] {
  const out: string[] = [];
  const patterns = [
    /^\s*(?:import|export)\s[^'"`;]*?\sfrom\s*['"]([^'"]+)['"]/gms,
    /^\s*import\s*['"]([^'"]+)['"]/gm,
    /\bimport\s*\(\s*['"]([^'"]+)['"]\s*\)/g,
  ];
  for (const re of patterns) for (const m of source.matchAll(re)) out.push(m[1]!);
  return out;
}

function tsFilesUnder(dir: string): string[] {
  const abs = path.join(projectRoot, dir);
  return readdirSync(abs, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && e.name.endsWith('.ts') && !e.name.endsWith('.d.ts'))
    .map((e) => path.relative(projectRoot, path.join(e.parentPath, e.name)).split(path.sep).join('/'))
    .sort();
}

/** A relative specifier as a path from the project root (`../../sql/queries/x.js` -> `sql/queries/x.js`); null for a package. */
function resolved(file: string, spec: string): string | null {
  if (!spec.startsWith('.')) return null;
  return path.posix.normalize(path.posix.join(path.posix.dirname(file), spec));
}

const builtins = new Set(builtinModules);
const isBuiltin = (spec: string) => spec.startsWith('node:') || builtins.has(spec) || builtins.has(spec.split('/')[0]!);
const packageOf = (spec: string) => (spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]!);

export function apiViolations(file: string, source: string): string[] {
  return specifiersOf(source).filter((spec) => {
    const target = resolved(file, spec);
    return target !== null && (target.startsWith('sql/queries/') || target.startsWith('workers/'));
  });
}

export function domainViolations(file: string, source: string, allowed: string[] = []): string[] {
  return specifiersOf(source).filter((spec) => {
    const target = resolved(file, spec);
    if (target !== null) return !target.startsWith('domain/');
    if (isBuiltin(spec)) return false;
    const pkg = packageOf(spec);
    return pkg !== 'zod' && !allowed.includes(pkg);
  });
}

describe('house layering (issue 16 item 6)', () => {
  const read = (file: string) => readFileSync(path.join(projectRoot, file), 'utf8');

  it('finds the imports it must judge (the scanner is not blind)', () => {
    const src = [
      "import { a } from '../../sql/queries/projects.js';",
      "import type { B } from '../../infra/x.js';",
      "import {\n  c,\n  d,\n} from '../../workers/cr-merge.js';",
      "export * from '../../sql/queries/events.js';",
      "import '../../workers/side-effect.js';",
      "const m = await import('../../sql/queries/apps.js');",
      "// from '../../sql/queries/commented.js' is not an import",
    ].join('\n');
    expect(apiViolations('api/routes/x.ts', src)).to.have.members([
      '../../sql/queries/projects.js',
      '../../workers/cr-merge.js',
      '../../sql/queries/events.js',
      '../../workers/side-effect.js',
      '../../sql/queries/apps.js',
    ]);
    // Resolved from the file's own folder: from api/routes/x.ts, '../sql/queries' is api/sql/queries.
    expect(apiViolations('api/routes/x.ts', "import { q } from '../sql/queries/projects.js';")).to.deep.equal([]);
    expect(apiViolations('api/x.ts', "import { q } from '../sql/queries/projects.js';")).to.have.length(1);
    expect(apiViolations('api/routes/x.ts', "import { q } from '../../infra/projects/service.js';")).to.deep.equal([]);
    expect(apiViolations('api/dashboard/x.ts', "import { w } from '../../workers/manifest.js';")).to.have.length(1);
    expect(apiViolations('api/x.ts', "const m = await import('../workers/cr-merge.js');")).to.have.length(1);
    expect(apiViolations('api/x.ts', "export { x } from '../sql/queries/events.js';")).to.have.length(1);
    expect(apiViolations('api/x.ts', "import {\n  a,\n  b,\n} from '../sql/queries/events.js';")).to.have.length(1);

    expect(domainViolations('domain/manifest/x.ts', "import { z } from 'zod';\nimport { createHash } from 'node:crypto';\nimport path from 'path';")).to.deep.equal([]);
    expect(domainViolations('domain/manifest/x.ts', "import { SLUG } from './schema.js';\nimport { E } from '../errors.js';")).to.deep.equal([]);
    expect(domainViolations('domain/manifest/x.ts', "import type { Db } from '../../infra/db/db.js';")).to.deep.equal(['../../infra/db/db.js']);
    expect(domainViolations('domain/x.ts', "import pg from 'pg';\nimport { parse } from 'smol-toml';")).to.deep.equal(['pg', 'smol-toml']);
    expect(domainViolations('domain/x.ts', "import { parse } from 'smol-toml';", ['smol-toml'])).to.deep.equal([]);
  });

  it('api/ imports neither sql/queries nor workers (services in infra/ instead)', () => {
    const files = tsFilesUnder('api');
    expect(files).to.include.members(['api/project-access.ts', 'api/feed-hub.ts', 'api/routes/projects.ts', 'api/routes/accounts.ts']);
    const found: Record<string, string[]> = {};
    for (const file of files) {
      const bad = apiViolations(file, read(file));
      if (bad.length > 0) found[file] = bad;
    }
    const unexpected = Object.fromEntries(Object.entries(found).filter(([f]) => !(f in API_ALLOWED)));
    expect(unexpected, 'api modules importing sql/queries or workers; move the access into a service in infra/').to.deep.equal({});
    const stale = Object.keys(API_ALLOWED).filter((f) => !(f in found));
    expect(stale, 'allow-list entries that no longer break the rule; remove them').to.deep.equal([]);
  });

  it('domain/ imports only domain/, node builtins and zod', () => {
    const files = tsFilesUnder('domain');
    expect(files).to.include.members(['domain/errors.ts', 'domain/change-request/decide.ts']);
    const found: Record<string, string[]> = {};
    for (const file of files) {
      const bad = domainViolations(file, read(file), DOMAIN_ALLOWED[file] ?? []);
      if (bad.length > 0) found[file] = bad;
    }
    expect(found, 'domain modules importing outside domain/ (only node builtins and zod are allowed)').to.deep.equal({});
    const stale = Object.entries(DOMAIN_ALLOWED).flatMap(([file, pkgs]) =>
      pkgs.filter((pkg) => !specifiersOf(read(file)).some((s) => packageOf(s) === pkg)).map((pkg) => `${file}: ${pkg}`),
    );
    expect(stale, 'allow-list entries no longer used; remove them').to.deep.equal([]);
  });
});
