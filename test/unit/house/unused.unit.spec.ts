import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { expect } from 'chai';
import { projectRoot } from '../../../lib/paths.js';

/**
 * No unused file, export or dependency, and no dependency used without being listed:
 * knip (knip.jsonc says what the entry points are and what it may not see). Dead exports
 * are where copies hide; a dependency nothing imports is attack surface nobody reads.
 */
describe('house: nothing unused (knip)', function () {
  this.timeout(120_000);

  it('knip finds no unused file, export, type or dependency', () => {
    const knip = path.join(projectRoot, 'node_modules', '.bin', 'knip');
    const r = spawnSync(knip, ['--no-progress', '--no-config-hints'], { cwd: projectRoot, encoding: 'utf8' });
    expect(r.error, 'knip is a devDependency: npm install').to.equal(undefined);
    expect(`${r.stdout}${r.stderr}`.trim(), 'npm run lint:unused').to.equal('');
    expect(r.status).to.equal(0);
  });
});
