import { ChildProcess, spawn, type SpawnOptions } from 'node:child_process';
import { spawnFault } from './failpoints.js';

/**
 * The one way the server starts a child process. A spawn can fail for reasons that say
 * nothing about the request (EMFILE when a sandbox filled the file table, ENOMEM, EAGAIN
 * at the process limit). Node reports some of those by throwing and others by an 'error'
 * event on the next tick with no stdio streams at all; an 'error' event nobody listens to
 * ends the process. Here both become the same thing: `onError` is attached before the
 * child is returned (before anything can touch it), a synchronous throw is turned into
 * that event, and the caller must read `child.stdin/stdout/stderr` as possibly null.
 * Failing the one operation that wanted the child is then the caller's whole job.
 *
 * `kind` names the call site for fault injection (lib/failpoints.ts `setSpawnFault`,
 * `SVC_FAILPOINTS=spawn.<kind>=EMFILE`), so tests can prove each site survives.
 */
export function spawnChild(kind: string, file: string, args: readonly string[], options: SpawnOptions, onError: (err: NodeJS.ErrnoException) => void): ChildProcess {
  const injected = spawnFault(kind);
  let child: ChildProcess;
  if (injected) {
    child = failedChild(errnoError(injected, file));
  } else {
    try {
      child = spawn(file, args as string[], options);
    } catch (err) {
      child = failedChild(err as NodeJS.ErrnoException);
    }
  }
  child.on('error', onError);
  return child;
}

/** A child that never started: no pid, no stdio, one 'error' on the next tick (as Node does for EMFILE). */
function failedChild(err: NodeJS.ErrnoException): ChildProcess {
  const child = new ChildProcess();
  process.nextTick(() => child.emit('error', err));
  return child;
}

function errnoError(code: string, file: string): NodeJS.ErrnoException {
  const err: NodeJS.ErrnoException = new Error(`spawn ${file} ${code}`);
  err.code = code;
  err.errno = code === 'EMFILE' ? -24 : code === 'ENOMEM' ? -12 : code === 'EAGAIN' ? -11 : -1;
  err.syscall = `spawn ${file}`;
  return err;
}

/** Errors that say the machine is short of something (files, memory, processes), not that the request is wrong. */
const SHORT_OF = new Set(['EMFILE', 'ENFILE', 'ENOMEM', 'EAGAIN']);

/** True for a system resource failure, given directly or as the `systemCode` of an error that wraps one (GitCommandError). */
export function isResourceExhausted(err: unknown): boolean {
  if (!err || typeof err !== 'object') return false;
  const e = err as { code?: unknown; systemCode?: unknown; cause?: unknown };
  if (typeof e.code === 'string' && SHORT_OF.has(e.code)) return true;
  if (typeof e.systemCode === 'string' && SHORT_OF.has(e.systemCode)) return true;
  return e.cause !== undefined && e.cause !== err && isResourceExhausted(e.cause);
}
