import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../../../lib/paths.js';
import { tsFilesUnder } from './layers.js';

/**
 * Every advisory lock the server takes is built in one place (sql/queries/advisory-locks.ts)
 * and taken through `withAdvisoryLock` (infra/db/advisory-lock.ts) or the leader locks
 * (infra/db/leader-lock.ts): one key scheme, one way to give the lock back, one rule for a
 * connection that could not.
 */
const SERVER = ['lib', 'domain', 'contracts', 'sql', 'infra', 'projections', 'services', 'api', 'workers', 'ops'];
const BUILDER = 'sql/queries/advisory-locks.ts';

export const advisoryCallsOf = (source: string): string[] =>
  source
    .split('\n')
    .map((line, i) => ({ line, i }))
    .filter(({ line }) => !/^\s*(\*|\/\/)/.test(line) && /\bpg_(?:try_)?advisory_/.test(line))
    .map(({ line, i }) => `${i + 1}: ${line.trim()}`);

const AROUND: Record<string, string> = {
  'services/a.ts': "await client.query('SELECT pg_try_advisory_lock(hashtextextended($1, 0)) AS ok', [key]);",
  'sql/queries/b.ts': "lock: (k: string): Query => ({ text: 'SELECT pg_advisory_lock(hashtextextended($1, 0))', values: [k] }),",
  'infra/c.ts': "await listener.query('SELECT pg_advisory_unlock_all()');",
  'sql/queries/d.ts': "xact: (k: string): Query => ({ text: 'SELECT pg_advisory_xact_lock(hashtextextended($1, 12))', values: [k] }),",
};

describe('house: one builder for advisory locks', () => {
  it('fails on the negative fixture: every lock taken around the builder is found', () => {
    for (const [file, src] of Object.entries(AROUND)) expect(advisoryCallsOf(src), file).to.have.length(1);
    expect(advisoryCallsOf(' * `pg_try_advisory_lock` in a comment')).to.deep.equal([]);
  });

  it('the source tree: only sql/queries/advisory-locks.ts names an advisory-lock function', () => {
    const files = SERVER.flatMap(tsFilesUnder);
    expect(files).to.include(BUILDER);
    const found = files.filter((f) => f !== BUILDER && advisoryCallsOf(readFileSync(path.join(projectRoot, f), 'utf8')).length > 0);
    expect(found, 'build the lock in sql/queries/advisory-locks.ts and take it with withAdvisoryLock').to.deep.equal([]);
  });
});
