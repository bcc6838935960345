import { accessSync, constants as fsConstants } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { repoConfigText } from './config-file.js';

/** The directory of a file:// URL. */
export function localDirOf(url: string): string | null {
  try {
    return path.resolve(fileURLToPath(url));
  } catch {
    return null;
  }
}

const RECEIVE_HOOKS = ['pre-receive', 'update', 'post-receive', 'post-update', 'reference-transaction', 'proc-receive', 'push-to-checkout'];

/**
 * A bare repository with no hook a push would run and no `core.hooksPath`: moving its
 * ref in place is exactly what a push would do. Anything else (a work tree, hooks) is
 * published by push so the repository's own rules apply. Read synchronously, like the ref
 * files (./local-refs.ts): a small config and a few stats cost microseconds, a thread-pool
 * round trip each costs more than all of them.
 */
export function publishableInPlace(dir: string): boolean {
  try {
    const config = repoConfigText(dir);
    if (config === null || !/^\s*bare\s*=\s*true\s*$/m.test(config) || config.includes('hookspath')) return false;
    for (const h of RECEIVE_HOOKS) {
      try {
        accessSync(path.join(dir, 'hooks', h), fsConstants.X_OK);
        return false;
      } catch {
        /* no such hook */
      }
    }
    return true;
  } catch {
    return false;
  }
}
