import { expect } from 'chai';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { loadMigrations } from '../../../infra/db/migrate.js';

describe('migration numbers', () => {
  it('the tree has no two migrations with one number', async () => {
    const all = await loadMigrations();
    expect(new Set(all.map((m) => m.version)).size).to.equal(all.length);
    expect(all.map((m) => m.version)).to.include.members([1, 26]);
  });

  it('a number taken twice (two branches landed with the same one) is refused by name', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'svc-migrations-'));
    try {
      await writeFile(path.join(dir, '041_gateway_keys.sql'), 'SELECT 1;');
      await writeFile(path.join(dir, '041_egress.sql'), 'SELECT 1;');
      let err: Error | undefined;
      await loadMigrations(dir).catch((e: Error) => (err = e));
      expect(err?.message).to.equal('migrations 041_egress.sql and 041_gateway_keys.sql share the number 041');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
