import { appendFileSync, closeSync, constants, mkdirSync, openSync, renameSync, statSync, unlinkSync, writeSync } from 'node:fs';
import path from 'node:path';
import { repoConfigText } from './config-file.js';
import { identLine } from './commit-object.js';
import { SYSTEM_IDENTITY, type Identity } from './port.js';
import { assertBranchName, assertSha } from '../../domain/refs.js';
import type { LocalRefReader } from './local-refs.js';
import { epochMsOf } from '../../lib/clock.js';

/**
 * `git update-ref refs/heads/<branch> <next> <expectedOld>` without a git process, on a
 * bare repository with the files ref backend, by git's own protocol: take the ref's lock
 * file (`<ref>.lock`, created exclusively: a git process updating the same ref at the same
 * moment fails to take it, and so do we), compare the ref's current value (loose, else
 * packed) with the expected one under the lock, write the new value into the lock file,
 * append the reflog entry when the repository keeps one, and rename the lock over the ref.
 *
 * - `moved`: the ref now holds `next`;
 * - `stale`: it did not hold `expectedOld` (nothing written);
 * - `null`: not certain to behave as git would here (the ref store is not the plain files
 *   backend, the config asks for fsync or shared permissions, the lock is taken, the ref is
 *   symbolic or only packed in a directory that does not exist): the caller runs
 *   `git update-ref`.
 * test/git/git-equivalence.int.spec.ts holds it to the ref and reflog bytes git writes and
 * to git's flushes (fsync), traced.
 * A `reference-transaction` hook makes no difference: no git the server runs runs hooks
 * (lib/git-run.ts), so `update-ref` would not run it either.
 */
export type CasOutcome = 'moved' | 'stale' | null;

export function casBranch(
  /** The caller's reader of `gitDir`'s refs (its config and packed-refs caches are reused); null: git decides. */
  reader: LocalRefReader | null,
  gitDir: string,
  branch: string,
  next: string,
  expectedOld: string,
  reflog: { message: string; identity?: Identity; epochSeconds?: number },
): CasOutcome {
  assertBranchName(branch);
  assertSha(next, 'next');
  assertSha(expectedOld, 'expected_old');
  if (!reader) return null;
  // Where git would flush the ref (core.fsync and friends) or widen its permissions
  // (core.sharedRepository), git writes it; git's defaults do neither.
  if (/fsync|sharedrepository/.test(repoConfigText(gitDir) ?? '')) return null;
  const ref = path.join(gitDir, 'refs', 'heads', ...branch.split('/'));
  const lockPath = `${ref}.lock`;
  let fd: number;
  try {
    fd = openSync(lockPath, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o666);
  } catch {
    return null; // taken (git waits for it a while), or no such directory: git decides
  }
  let locked = true;
  try {
    // Read under the lock: what a concurrent writer finished before we took it is seen.
    const current = readTipSync(reader, branch);
    if (current === undefined) return null;
    if (current !== expectedOld) return 'stale';
    writeSync(fd, `${next}\n`);
    closeSync(fd);
    fd = -1;
    if (keepsReflog(gitDir, branch)) {
      const log = path.join(gitDir, 'logs', 'refs', 'heads', ...branch.split('/'));
      mkdirSync(path.dirname(log), { recursive: true });
      const who = identLine(reflog.identity ?? SYSTEM_IDENTITY, reflog.epochSeconds ?? Math.floor(epochMsOf() / 1000));
      appendFileSync(log, `${expectedOld} ${next} ${who}\t${reflog.message.replace(/\s+/g, ' ').trim()}\n`);
    }
    renameSync(lockPath, ref);
    locked = false;
    return 'moved';
  } finally {
    if (fd >= 0) closeSync(fd);
    if (locked) unlinkSync(lockPath);
  }
}

/** undefined: the reader cannot say (git decides). */
function readTipSync(reader: LocalRefReader, branch: string): string | null | undefined {
  const t = reader.readTipsSync([branch]);
  return t === null ? undefined : (t[branch] ?? null);
}

/** git appends to a ref's log when the log exists, or when core.logAllRefUpdates asks for one. */
function keepsReflog(gitDir: string, branch: string): boolean {
  if (statSync(path.join(gitDir, 'logs', 'refs', 'heads', ...branch.split('/')), { throwIfNoEntry: false })) return true;
  return logAllRefUpdates(gitDir);
}

function logAllRefUpdates(gitDir: string): boolean {
  // The reader already refused configs with includes; a plain scan of the [core] key suffices.
  const m = /^\s*logallrefupdates\s*=\s*(\S+)\s*$/m.exec(repoConfigText(gitDir) ?? '');
  return m ? ['true', 'always', 'yes', 'on', '1'].includes(m[1]!) : false;
}
