/**
 * Reading `git push --porcelain`: one line per ref, `<flag>\t<from>:<to>\t<summary>`. The
 * summary of a refused ref starts with `[rejected]` (refused by the pushing git before
 * anything is sent: with a lease, a stale one; with `--atomic`, every other ref of a push
 * that had one refused, as `[rejected] (atomic push failed)`) or `[remote rejected]
 * (<reason>)` (refused by the server: a hook, a protected or checked-out branch).
 */
export interface PorcelainRef {
  flag: string;
  summary: string;
}

export function porcelainRef(stdout: Buffer, ref: string): PorcelainRef | null {
  for (const line of stdout.toString('utf8').split('\n')) {
    const parts = line.split('\t');
    if (parts.length >= 2 && parts[1]!.endsWith(`:${ref}`)) return { flag: parts[0]!, summary: parts[2] ?? '' };
  }
  return null;
}

/** The server's reason for a `[remote rejected]` ref, or null when it was not refused by the server. */
export function remoteRejectedReason(r: PorcelainRef | null): string | null {
  if (r?.flag !== '!' || !r.summary.startsWith('[remote rejected]')) return null;
  return /^\[remote rejected\] \((.{1,200})\)/.exec(r.summary)?.[1] ?? 'no reason given';
}

/** Refused by the pushing git itself (a stale lease, or the atomic push another ref failed): nothing was sent. */
const refusedLocally = (r: PorcelainRef | null): boolean => r?.flag === '!' && r.summary.startsWith('[rejected]');

/**
 * How an atomic push of `refs` ended, from its exit code and porcelain lines:
 * - `pushed`: git exited 0 and no ref was refused;
 * - `stale`: refused by the pushing git before sending (a lease did not hold), no ref
 *   refused by the server; with `--atomic` nothing moved;
 * - `rejected`: the server refused the first ref, with its reason;
 * - `unknown`: anything else (no status for a ref, a mixed report): the caller finds out.
 */
export type AtomicPushOutcome = { kind: 'pushed' } | { kind: 'stale' } | { kind: 'rejected'; reason: string } | { kind: 'unknown' };

export function atomicPushOutcome(code: number, stdout: Buffer, refs: readonly string[]): AtomicPushOutcome {
  const lines = refs.map((ref) => porcelainRef(stdout, ref));
  if (lines.some((l) => l === null)) return { kind: 'unknown' };
  const reason = remoteRejectedReason(lines[0]!);
  if (reason !== null) return { kind: 'rejected', reason };
  if (code === 0 && lines.every((l) => l!.flag !== '!')) return { kind: 'pushed' };
  if (code !== 0 && lines.some(refusedLocally) && lines.every((l) => l!.flag === '!' ? refusedLocally(l) : l!.flag === '=')) return { kind: 'stale' };
  return { kind: 'unknown' };
}
