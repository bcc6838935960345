import { expect } from 'chai';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../../../lib/paths.js';
import { LAYERS, specifiersOf, violations, tsFilesUnder } from './layers.js';

/**
 * The house rules (shared/design/architecture.md; the arrows are data in ./layers.ts),
 * checked on the source tree so they cannot regress. `npm run lint:house` runs this file
 * alone.
 */

/**
 * Imports still allowed to break an arrow, each with why. An entry that no longer breaks
 * it fails the test, so the list only shrinks.
 */
const ALLOWED: Record<string, { specs: string[]; why: string }> = {
  'bench/suites/agentd.ts': { specs: ['../../test/agentd/support/harness.js'], why: 'the daemon bench starts the daemon the way its tests do' },
  'bench/suites/agent-loop.ts': { specs: ['../../test/support/scripted-model.js'], why: 'the agent-loop bench plays the model with the tests\' scripted one' },
  'bench/suites/dashboard.ts': { specs: ['../../test/dashboard/support.js'], why: 'the dashboard bench signs in the way its tests do' },
};

/** The arrows broken by a set of files, as `file: [specifiers]`. */
function broken(files: Record<string, string>): Record<string, string[]> {
  const found: Record<string, string[]> = {};
  for (const [file, source] of Object.entries(files)) {
    const bad = violations(file, source);
    if (bad.length > 0) found[file] = bad;
  }
  return found;
}

/**
 * The negative fixture: one file per forbidden arrow, each of which the checker must
 * report, beside files that keep the rules and must pass.
 */
const FORBIDDEN: Record<string, string> = {
  'lib/x.ts': "import { a } from '../domain/errors.js';",
  'domain/x.ts': "import type { Db } from '../infra/db/db.js';\nimport pg from 'pg';",
  'sql/queries/x.ts': "import type { Query } from '../../infra/db/db.js';",
  'infra/x.ts': "import { s } from '../services/projects/service.js';",
  'infra/y.ts': "import { p } from '../projections/sessions.js';",
  'projections/x.ts': "import { s } from '../services/sessions/handle.js';",
  'services/x.ts': "import { r } from '../api/errors.js';",
  'services/y.ts': "const w = await import('../workers/cr-merge.js');",
  'api/x.ts': "import { q } from '../sql/queries/projects.js';",
  'api/routes/y.ts': "export * from '../../workers/cr-merge.js';",
  'api/dashboard/z.ts': "import { c } from '../../cli/api-client.js';",
  'workers/x.ts': "import { a } from '../api/app.js';",
  'cli/x.ts': "import {\n  s,\n} from '../services/sessions/service.js';",
  'agentd/x.ts': "import { l } from '../infra/git/errors.js';",
  'agentd/raw-proxy/y.ts': "import '../../sql/queries/sessions.js';",
  'contracts/x.ts': "import { s } from '../services/sessions/view.js';",
};
const KEPT: Record<string, string> = {
  'lib/x.ts': "import { pino } from 'pino';\nimport fs from 'node:fs';",
  'domain/x.ts': "import { z } from 'zod';\nimport path from 'path';\nimport { E } from './errors.js';\nimport { now } from '../lib/time.js';",
  'sql/queries/x.ts': "import type { Query } from '../query.js';\nimport type { H } from '../../domain/sandbox.js';",
  'infra/x.ts': "import { q } from '../sql/queries/events.js';\nimport pg from 'pg';",
  'projections/x.ts': "import { s } from '../infra/event-store.js';",
  'services/x.ts': "import { p } from '../projections/sessions.js';\nimport { q } from '../sql/queries/sessions.js';",
  'api/routes/x.ts': "import { s } from '../../services/projects/service.js';\nimport { c } from '../../contracts/session.js';",
  'workers/x.ts': "import { s } from '../services/change-requests/merge.js';",
  'ops/x.ts': "import { a } from '../api/app.js';\nimport { w } from '../workers/cr-merge.js';",
  'cli/x.ts': "import { c } from '../contracts/session.js';\nimport { l } from '../lib/logger.js';",
  'agentd/x.ts': "import { r } from '../domain/refs.js';\nimport { g } from '../lib/git-run.js';",
  'test/x.ts': "import { anything } from '../infra/db/db.js';",
};

describe('house layering', () => {
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
    expect(specifiersOf(src)).to.have.members([
      '../../sql/queries/projects.js',
      '../../infra/x.js',
      '../../workers/cr-merge.js',
      '../../sql/queries/events.js',
      '../../workers/side-effect.js',
      '../../sql/queries/apps.js',
    ]);
    // Resolved from the file's own folder: from api/routes/x.ts, '../sql/queries' is api/sql/queries.
    expect(violations('api/routes/x.ts', "import { q } from '../sql/queries/projects.js';")).to.deep.equal([]);
    expect(violations('api/x.ts', "import { q } from '../sql/queries/projects.js';")).to.have.length(1);
  });

  it('fails on the negative fixture: every forbidden arrow is reported', () => {
    const found = broken(FORBIDDEN);
    expect(Object.keys(found).sort()).to.deep.equal(Object.keys(FORBIDDEN).sort());
    expect(found['domain/x.ts']).to.deep.equal(['../infra/db/db.js', 'pg']);
    expect(found['cli/x.ts']).to.deep.equal(['../services/sessions/service.js']);
  });

  it('passes files that keep the arrows', () => {
    expect(broken(KEPT)).to.deep.equal({});
  });

  it('every top-level source folder has a layer (a new folder must be placed)', () => {
    const dirs = readdirSync(projectRoot, { withFileTypes: true })
      .filter((e) => e.isDirectory() && !e.name.startsWith('.') && !['node_modules', 'dist', 'docs', 'test'].includes(e.name))
      .filter((e) => tsFilesUnder(e.name).length > 0)
      .map((e) => e.name);
    expect(dirs.filter((d) => !(d in LAYERS))).to.deep.equal([]);
  });

  it('the source tree keeps every arrow', () => {
    const files = Object.keys(LAYERS).flatMap(tsFilesUnder);
    expect(files).to.include.members(['domain/errors.ts', 'api/project-access.ts', 'services/sessions/service.ts', 'lib/logger.ts']);
    const found = broken(Object.fromEntries(files.map((f) => [f, read(f)])));
    const unexpected: Record<string, string[]> = {};
    for (const [file, specs] of Object.entries(found)) {
      const rest = specs.filter((s) => !(ALLOWED[file]?.specs ?? []).includes(s));
      if (rest.length > 0) unexpected[file] = rest;
    }
    expect(unexpected, 'imports against the arrows in test/unit/house/layers.ts').to.deep.equal({});
    const stale = Object.entries(ALLOWED).flatMap(([file, { specs }]) => specs.filter((s) => !(found[file] ?? []).includes(s)).map((s) => `${file}: ${s}`));
    expect(stale, 'allow-list entries that no longer break an arrow; remove them').to.deep.equal([]);
  });
});
