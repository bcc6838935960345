import { DomainError } from '../../domain/errors.js';
import { failpointAsync } from '../../lib/failpoints.js';
import { GitCommandError, isGitCommandError } from '../../lib/git-run.js';
import type { Logger } from '../../lib/logger.js';
import { step } from '../../lib/step-trace.js';
import { refMoved } from './errors.js';
import { httpPush, nodePushApplies, type HttpPushOutcome } from './http-push.js';
import type { MirrorState } from './mirror.js';
import { atomicPushOutcome, porcelainRef, remoteRejectedReason, type AtomicPushOutcome } from './push-porcelain.js';
import type { RemoteTransport } from './remote-transport.js';
import { checkRepoUrl, type RepoUrlPolicy } from './url-policy.js';

/**
 * Moving a remote's branches, from objects already in its mirror: the Node push over
 * smart HTTP (./http-push.ts) where it applies, else `git push`, always with leases, the
 * outcome read from the server's report (porcelain lines, exit codes), never guessed.
 */
export class RemotePublisher {
  /** Until when merges skip presuming the mirror's tips (after a push whose outcome git did not report, e.g. a server without atomic pushes). */
  presumeTipsAfter = 0;
  /** Until when pushes skip the Node push (it could not push here). */
  private nodePushAfter = 0;

  constructor(
    private readonly transport: RemoteTransport,
    private readonly o: {
      mirror: MirrorState;
      policy: RepoUrlPolicy | undefined;
      hasCredentials: boolean;
      /** What the Node push sends as Basic auth (the same rule as git's helper). */
      credentials: { username: string; password: string } | null;
      timeoutMs: number;
      log: Logger | undefined;
      /** false: every push is a `git push`. */
      nodePush: boolean;
    },
  ) {}

  /**
   * Moves `refs/heads/<branch>` on the remote from `expectedOld` (null: must not exist)
   * to `next`. The outcome comes from the exit code and the porcelain status flag.
   */
  async pushWithLease(branch: string, next: string, expectedOld: string | null, haves?: string[]): Promise<void> {
    const ref = `refs/heads/${branch}`;
    const node = expectedOld !== null && haves ? await this.nodePush({ ref, next }, [{ ref, expected: expectedOld }], haves) : null;
    if (node?.kind === 'pushed') {
      await failpointAsync('git.push.after-remote-moved');
      return;
    }
    if (node?.kind === 'rejected') throw pushRejected(branch, node.reason);
    if (node?.kind === 'stale') throw refMoved(ref);
    if (node) throw this.pushFailed(node.kind === 'denied' ? `HTTP ${node.status}` : node.why);
    let out: Buffer;
    let code: number;
    try {
      const r = await this.transport.git(
        [
          'push',
          '--porcelain',
          '--no-verify',
          '--no-recurse-submodules',
          `--force-with-lease=${ref}:${expectedOld ?? ''}`,
          '--end-of-options',
          this.transport.url,
          `${next}:${ref}`,
        ],
        { okCodes: [0, 1] },
      );
      out = r.stdout;
      code = r.code;
    } catch (e) {
      throw this.transport.unavailable(e);
    }
    const result = porcelainRef(out, ref);
    if (code === 0 && result !== null && result.flag !== '!') {
      // Tests: the remote moved, and then the answer is lost on its way back.
      await failpointAsync('git.push.after-remote-moved');
      return;
    }
    const reason = remoteRejectedReason(result);
    if (reason !== null) throw pushRejected(branch, reason);
    if (result?.flag === '!') throw refMoved(ref);
    throw this.transport.unavailable(new GitCommandError(['push'], code, null, ''));
  }

  /**
   * `git push --atomic` moving base from `base` to `next` and "pushing" head at `head`
   * (already there: a lease only), both leased, the leases checked by the pushing git
   * against the refs the server advertises and the base's old value again by the server.
   * - `pushed`: published;
   * - `stale`: a lease did not hold; refused before anything was sent, nothing moved;
   * - `unsure`: git reported no outcome (a server that refuses atomic pushes, a lost
   *   connection) and the base, read afterwards, is not at `next`: not published so far.
   *   Merges skip this way for a while, and the caller's record stays (a lost connection
   *   may still land the update: the long way's lease then refuses to overwrite it).
   * Throws what `pushWithLease` throws for a server's refusal, and `unavailable` when the
   * outcome cannot be known (the push was killed by its timeout, the base cannot be read).
   */
  async pushAtomicWithLeases(baseRef: string, headRef: string, next: string, base: string, head: string): Promise<'pushed' | 'stale' | 'unsure'> {
    const refs = [`refs/heads/${baseRef}`, `refs/heads/${headRef}`];
    const node = await this.nodePush({ ref: refs[0]!, next }, [{ ref: refs[0]!, expected: base }, { ref: refs[1]!, expected: head }], [base, head]);
    if (node?.kind === 'denied') throw this.pushFailed(`HTTP ${node.status}`);
    const outcome = node ?? (await this.gitAtomicPush(refs, next, base, head));
    if (outcome.kind === 'pushed' || outcome.kind === 'stale') return outcome.kind;
    if (outcome.kind === 'rejected') throw pushRejected(baseRef, outcome.reason);
    // No outcome reported (a server that refuses atomic pushes, a connection lost): the
    // base itself says whether the update happened.
    const live = (await this.transport.lsRemoteHeads([baseRef])).get(baseRef) ?? null;
    if (live === next) return 'pushed';
    this.presumeTipsAfter = performance.now() + 10 * 60_000;
    this.o.log?.warn({ base_ref: baseRef }, 'atomic push gave no outcome and did not publish; merging the long way for a while');
    return 'unsure';
  }

  /** `git push --atomic --porcelain` with both leases; its outcome from the exit code and porcelain lines. */
  private async gitAtomicPush(refs: string[], next: string, base: string, head: string): Promise<AtomicPushOutcome> {
    let code: number | null = null;
    let out: Buffer = Buffer.alloc(0);
    try {
      const r = await this.transport.git(
        [
          'push',
          '--atomic',
          '--porcelain',
          '--no-verify',
          '--no-recurse-submodules',
          `--force-with-lease=${refs[0]}:${base}`,
          `--force-with-lease=${refs[1]}:${head}`,
          '--end-of-options',
          this.transport.url,
          `${next}:${refs[0]}`,
          `${head}:${refs[1]}`,
        ],
        { okCodes: [0, 1] },
      );
      code = r.code;
      out = r.stdout;
    } catch (e) {
      if (!isGitCommandError(e) || e.signal !== null) throw this.transport.unavailable(e);
    }
    return code === null ? { kind: 'unknown' } : atomicPushOutcome(code, out, refs);
  }

  /**
   * The Node push (./http-push.ts) where it applies: turned on, an http(s) URL, none of
   * git's http variables in git's environment, not given up on for this repository. Null when it was
   * not tried or could not push with nothing sent (then `git push` runs; a Node push that
   * could not is not tried again for a while).
   */
  private async nodePush(
    update: { ref: string; next: string },
    leases: Array<{ ref: string; expected: string | null }>,
    haves: string[],
  ): Promise<Exclude<HttpPushOutcome, { kind: 'fallback' }> | null> {
    if (!this.o.nodePush || performance.now() < this.nodePushAfter || !nodePushApplies(this.transport.url)) return null;
    await this.o.mirror.ensureCreated();
    const t = this.o.policy ? await checkRepoUrl(this.transport.url, this.o.policy, { hasCredentials: this.o.hasCredentials }) : null;
    step('git: push: policy');
    const outcome = await httpPush({
      url: this.transport.url,
      credentials: this.o.credentials,
      addresses: t?.addresses ?? [],
      timeoutMs: this.o.timeoutMs,
      gitDir: this.o.mirror.path,
      leases,
      update,
      haves,
    });
    if (outcome.kind !== 'fallback') return outcome;
    this.nodePushAfter = performance.now() + 10 * 60_000;
    this.o.log?.info({ why: outcome.why }, 'pushing with git: the Node push cannot here');
    return null;
  }

  /** A push that failed without a status from the server: as git's exit 128 (refused, unreachable, cut off) maps today. */
  private pushFailed(why: string): Error {
    return this.transport.unavailable(new GitCommandError(['push'], 128, null, why));
  }
}

/** The server refused the update (a hook, a protected branch), with its reason. */
export function pushRejected(branch: string, reason: string): DomainError {
  return new DomainError('unavailable', 'Push rejected', `The repository refused to update ${branch}: ${reason}.`, { reason });
}
