import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import type { Db } from './db.js';
import { withAdvisoryLock } from './advisory-lock.js';
import { migrationsDir } from '../../lib/paths.js';
import { MIGRATION_LOCK, migrationQueries as q } from '../../sql/queries/migrations.js';
import type { Logger } from '../../lib/logger.js';

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

/** `sql/NNN_name.sql`, in version order. */
export async function loadMigrations(dir = migrationsDir): Promise<Migration[]> {
  const files = (await readdir(dir)).filter((f) => /^\d{3}_[a-z0-9_]+\.sql$/.test(f)).sort();
  const seen = new Map<string, string>();
  for (const f of files) {
    const other = seen.get(f.slice(0, 3));
    // Two branches that took the same number (docs/development.md reserves ranges per issue).
    if (other) throw new Error(`migrations ${other} and ${f} share the number ${f.slice(0, 3)}`);
    seen.set(f.slice(0, 3), f);
  }
  return Promise.all(
    files.map(async (f) => ({
      version: Number(f.slice(0, 3)),
      name: f.slice(4, -4),
      sql: await readFile(path.join(dir, f), 'utf8'),
    })),
  );
}

/**
 * Applies every migration not yet recorded, each in its own transaction, under a
 * session-level advisory lock so concurrent starters apply each migration exactly once.
 * Returns the versions applied by this call.
 */
export async function migrate(db: Db, opts: { logger?: Logger; dir?: string } = {}): Promise<number[]> {
  const migrations = await loadMigrations(opts.dir);
  const applied: number[] = [];
  await withAdvisoryLock(
    db,
    MIGRATION_LOCK,
    async (one) => {
      await one.run(q.createTable());
      const done = new Set((await one.rows<{ version: number }>(q.applied())).map((r) => Number(r.version)));
      for (const m of migrations) {
        if (done.has(m.version)) continue;
        try {
          await one.transaction(async (tx) => {
            await tx.run({ text: m.sql, values: [] });
            await tx.run(q.record(m.version, m.name));
          });
        } catch (err) {
          throw new Error(`migration ${m.version}_${m.name} failed: ${(err as Error).message}`, { cause: err });
        }
        applied.push(m.version);
        opts.logger?.info({ version: m.version, name: m.name }, 'applied migration');
      }
    },
    { wait: true },
  );
  return applied;
}
