import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';

/**
 * A repository's `config` file as lower-cased text, read once per version of the file
 * (inode, size, mtime in ns): the merge path consults it several times per merge (can the
 * ref move in place, may a commit be written from Node, does the ref keep a reflog), and a
 * small file's stat costs less than re-reading and re-scanning it each time. Null when
 * there is no config file. Synchronous, like the ref-file reads (./local-refs.ts).
 */
export function repoConfigText(gitDir: string): string | null {
  const file = path.join(gitDir, 'config');
  const st = statSync(file, { bigint: true, throwIfNoEntry: false });
  if (!st?.isFile()) return null;
  const version = `${st.ino}:${st.size}:${st.mtimeNs}`;
  const hit = cache.get(file);
  if (hit?.version === version) return hit.text;
  let text: string;
  try {
    text = readFileSync(file, 'utf8').toLowerCase();
  } catch {
    return null;
  }
  if (cache.size >= MAX_REPOS) cache.delete(cache.keys().next().value!);
  cache.set(file, { version, text });
  return text;
}

const MAX_REPOS = 1024;
const cache = new Map<string, { version: string; text: string }>();
