import { fileURLToPath } from 'node:url';
import path from 'node:path';

/** The package root, whether running from `dist/lib/paths.js` or elsewhere under dist. */
export const projectRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

/** Numbered `.sql` migrations live in the source tree, not in dist. */
export const migrationsDir = path.join(projectRoot, 'sql');
