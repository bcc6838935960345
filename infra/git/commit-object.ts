import { createHash, randomBytes } from 'node:crypto';
import { linkSync, mkdirSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { deflateSync } from 'node:zlib';
import { repoConfigText } from './config-file.js';
import type { Identity } from './port.js';

/**
 * A merge commit written without a git process: the object `git commit-tree <tree> -p
 * <base> -p <head> -F -` writes (same bytes, same id), as a loose object the way git
 * writes one (a `tmp_obj_*` file in the fan-out directory, hard-linked to its name). It
 * saves one process per merge commit on the merge path.
 *
 * It answers only where it is certain to agree with git, and returns null everywhere else
 * (the caller runs commit-tree): SHA-1 object ids, a repository whose config sets no
 * object format, shared permissions, include or fsync, and an identity git would store as
 * given (no characters it trims or refuses). test/git/git-equivalence.int.spec.ts holds it
 * to git's own bytes and to git's own flushes (fsync), traced.
 */
/** git's identity line (`Name <email> <epoch> +0000`), as commit objects and reflogs carry it. */
export const identLine = (who: Identity, epochSeconds: number): string => `${who.name} <${who.email}> ${epochSeconds} +0000`;

export function writeMergeCommit(
  repoDir: string,
  c: { tree: string; parents: [string, string]; author: Identity; epochSeconds: number; message: string },
): string | null {
  if (![c.tree, ...c.parents].every((id) => SHA1.test(id))) return null;
  if (!SAFE_NAME.test(c.author.name) || !SAFE_EMAIL.test(c.author.email)) return null;
  if (!Number.isSafeInteger(c.epochSeconds) || c.epochSeconds < 0) return null;
  if (!plainConfig(repoDir)) return null;
  const who = identLine(c.author, c.epochSeconds);
  const message = c.message.endsWith('\n') ? c.message : `${c.message}\n`;
  const body = Buffer.from(`tree ${c.tree}\nparent ${c.parents[0]}\nparent ${c.parents[1]}\nauthor ${who}\ncommitter ${who}\n\n${message}`, 'utf8');
  return writeLooseObject(repoDir, 'commit', body);
}

const SHA1 = /^[0-9a-f]{40}$/;
/** Letters, digits, inner spaces, dots, dashes, underscores: nothing git's ident cleanup changes. */
const SAFE_NAME = /^[A-Za-z0-9](?:[A-Za-z0-9 ._-]{0,98}[A-Za-z0-9])?$/;
const SAFE_EMAIL = /^[A-Za-z0-9][A-Za-z0-9._+-]{0,100}@[A-Za-z0-9.-]{1,100}$/;

/**
 * No setting that changes how git would write the object: objectformat / sharedrepository
 * / include, nor any fsync setting (core.fsync, core.fsyncMethod, core.fsyncObjectFiles:
 * where git would flush the object to disk, git writes it; by default git 2.36+ does not
 * flush loose objects, and neither does this).
 */
function plainConfig(repoDir: string): boolean {
  const text = repoConfigText(repoDir);
  return text !== null && !/objectformat|sharedrepository|include|compatobjectformat|fsync/.test(text);
}

/** git's loose object: zlib of `<type> <size>\0<body>`, named by the SHA-1 of that; read-only. */
function writeLooseObject(repoDir: string, type: string, body: Buffer): string {
  const full = Buffer.concat([Buffer.from(`${type} ${body.length}\0`), body]);
  const id = createHash('sha1').update(full).digest('hex');
  const dir = path.join(repoDir, 'objects', id.slice(0, 2));
  const file = path.join(dir, id.slice(2));
  if (exists(file)) return id;
  const tmp = path.join(dir, `tmp_obj_${randomBytes(6).toString('hex')}`);
  const bytes = deflateSync(full);
  // Repository maintenance (`prune-packed`) removes an empty fan-out directory at any
  // moment, also between our mkdir and our write: then make it again, as git does.
  for (let attempt = 0; ; attempt++) {
    mkdirSync(dir, { recursive: true });
    try {
      writeFileSync(tmp, bytes, { mode: 0o444, flag: 'wx' });
      break;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT' || attempt >= 3) throw e;
    }
  }
  try {
    linkSync(tmp, file);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e; // written meanwhile: the same bytes
  } finally {
    unlinkSync(tmp);
  }
  return id;
}

/** git never replaces an object it has: a non-empty file of that name is that object. */
const exists = (file: string): boolean => (statSync(file, { throwIfNoEntry: false })?.size ?? 0) > 0;
