/**
 * The pre-receive hook of managed repositories: the CR-only default branch, as a property
 * of the server. `git receive-pack` runs it (through `core.hooksPath`, given on the
 * command line, never stored in a repository) after the pushed objects are in quarantine
 * and before any ref moves, with one `<old> <new> <ref>` line per command on stdin.
 * Anything it prints on stderr reaches the pusher as `remote: ...`; a non-zero exit
 * refuses every ref of the push.
 *
 * The server says who pushes (SVC_DEFAULT_BRANCH, SVC_PUSHER, SVC_PUSHER_BRANCH come
 * from api/routes/git-http.ts, already validated; missing or unknown: the push is refused):
 *  - `refs/svc/*` is the server's own namespace: nobody pushes there;
 *  - the default branch is never created, updated or deleted by a push, except by the
 *    very first push into an empty repository (by a person);
 *  - a session branch (a uuid name) and a stack branch (`<uuid>-<n>`, 1..20,
 *    domain/stack-branches.ts) are never deleted or moved to a commit that does not
 *    contain their current tip: no rewriting history;
 *  - an agent (SVC_PUSHER=agent, an agent-grade credential) pushes only its own session
 *    branch (SVC_PUSHER_BRANCH) and its own stack branches: create or fast-forward,
 *    nothing else, no tags; another session's stack branch name is refused like its
 *    session branch.
 * For people, tags and other branches are not the service's business.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { chmod, mkdir, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { redact } from '../../lib/git-run.js';
import { relayAuth, relayLocationFromEnv } from './relay.js';
import type { RepoLocation } from './port.js';
import { isOwnBranch, isProtectedSessionBranch, parseStackBranch } from '../../domain/stack-branches.js';

export const CR_ONLY_MESSAGE =
  'the default branch moves only through change requests: push a branch and open one with `svc cr open`';
export const NO_REWRITE_MESSAGE = 'no rewriting history: a session branch accepts only fast-forward pushes and is never deleted';
export const AGENT_BRANCH_MESSAGE = 'agent credentials push only their own session branch';
export const AGENT_STACK_BRANCH_MESSAGE = 'agent credentials push only their own session branch and its stack branches <session branch>-<n> (n from 1 to 20)';
export const SVC_NAMESPACE_MESSAGE = 'refs/svc/ belongs to the server: nobody pushes there';

const SESSION_BRANCH = /^refs\/heads\/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const branchOf = (ref: string): string | null => (ref.startsWith('refs/heads/') ? ref.slice('refs/heads/'.length) : null);
const OID = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;
const isZero = (oid: string) => /^0+$/.test(oid);

export interface RefUpdate {
  old: string;
  next: string;
  ref: string;
}

/** Who pushes: a person (the spec's rights) or an agent bound to its session branch. */
export type Pusher = { kind: 'person' } | { kind: 'agent'; branch: string };

export interface RepoFacts {
  /** No ref at all before this push. */
  empty(): boolean;
  isAncestor(ancestor: string, descendant: string): boolean;
}

/** The refusals for a push, one line each (empty: accept). Pure but for the two facts. */
export function checkPush(updates: RefUpdate[], defaultBranch: string, facts: RepoFacts, pusher: Pusher): string[] {
  const refusals: string[] = [];
  const defaultRef = `refs/heads/${defaultBranch}`;
  for (const u of updates) {
    if (u.ref.startsWith('refs/svc/')) {
      refusals.push(`${u.ref}: ${SVC_NAMESPACE_MESSAGE}`);
    } else if (pusher.kind === 'agent' && !isOwnBranch(pusher.branch, branchOf(u.ref) ?? '')) {
      const message = u.ref === defaultRef
        ? CR_ONLY_MESSAGE
        : parseStackBranch(branchOf(u.ref) ?? '')
          ? `${AGENT_STACK_BRANCH_MESSAGE} (refs/heads/${pusher.branch}-<n>)`
          : `${AGENT_BRANCH_MESSAGE} (refs/heads/${pusher.branch})`;
      refusals.push(`${u.ref}: ${message}`);
    } else if (u.ref === defaultRef) {
      const firstPush = isZero(u.old) && !isZero(u.next) && facts.empty();
      if (!firstPush) refusals.push(`${u.ref}: ${CR_ONLY_MESSAGE}`);
    } else if (isProtectedSessionBranch(branchOf(u.ref) ?? '') && !isZero(u.old)) {
      if (isZero(u.next)) refusals.push(`${u.ref}: ${NO_REWRITE_MESSAGE} (deletion refused)`);
      else if (!facts.isAncestor(u.old, u.next)) refusals.push(`${u.ref}: ${NO_REWRITE_MESSAGE} (non-fast-forward refused)`);
    }
  }
  return refusals;
}

export function parseUpdates(text: string): RefUpdate[] | null {
  const out: RefUpdate[] = [];
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const [old, next, ref, extra] = line.split(' ');
    if (extra !== undefined || !old || !next || !ref || !OID.test(old) || !OID.test(next) || !ref.startsWith('refs/')) return null;
    out.push({ old, next, ref });
  }
  return out;
}

/** git in the hook's own environment: it carries the quarantine's object directories. */
function git(args: string[]): { code: number | null; stdout: string } {
  const r = spawnSync('git', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], shell: false });
  return { code: r.status, stdout: r.stdout ?? '' };
}

/** The pusher the server named, or null (refuse) when it named none or something else. */
export function pusherFrom(env: NodeJS.ProcessEnv): Pusher | null {
  if (env.SVC_PUSHER === 'person') return { kind: 'person' };
  const branch = env.SVC_PUSHER_BRANCH ?? '';
  if (env.SVC_PUSHER === 'agent' && SESSION_BRANCH.test(`refs/heads/${branch}`)) return { kind: 'agent', branch };
  return null;
}

function main(): number {
  const defaultBranch = process.env.SVC_DEFAULT_BRANCH ?? '';
  const pusher = pusherFrom(process.env);
  let input = '';
  try {
    input = readFileSync(0, 'utf8'); // the whole input is a few lines
  } catch {
    input = '';
  }
  const updates = parseUpdates(input);
  if (updates === null || !defaultBranch || !pusher) {
    process.stderr.write('svc: this push could not be checked; try again\n');
    return 1;
  }
  let empty: boolean | undefined;
  const refusals = checkPush(updates, defaultBranch, {
    empty: () => (empty ??= git(['for-each-ref', '--count=1', '--format=%(refname)']).stdout.trim() === ''),
    isAncestor: (a, d) => git(['merge-base', '--is-ancestor', '--end-of-options', a, d]).code === 0,
  }, pusher);
  if (refusals.length > 0) {
    process.stderr.write(refusals.map((r) => `svc: refused ${r}\n`).join(''));
    return 1;
  }
  const relay = relayLocationFromEnv(process.env);
  return relay && updates.length > 0 ? relayPush(updates, relay) : 0;
}

/** The `git push` arguments that relay `updates` to the remote: atomic, each leased on its old value. */
export function relayPushArgs(updates: RefUpdate[], url: string): string[] {
  const leases = updates.map((u) => `--force-with-lease=${u.ref}:${isZero(u.old) ? '' : u.old}`);
  const specs = updates.map((u) => (isZero(u.next) ? `:${u.ref}` : `${u.next}:${u.ref}`));
  return ['push', '--porcelain', '--atomic', '--no-verify', ...leases, '--end-of-options', url, ...specs];
}

/**
 * A relayed push (infra/git/relay.ts): the accepted commands go to the remote first, with
 * the objects still in quarantine; only if the remote takes them all do the relay's refs
 * move. The remote's refusal reaches the pusher, its credentials never do.
 */
function relayPush(updates: RefUpdate[], location: RepoLocation): number {
  const auth = relayAuth(location);
  const r = spawnSync('git', [...auth.configArgs, '-c', 'http.followRedirects=false', ...relayPushArgs(updates, location.url)], {
    encoding: 'utf8',
    env: { ...process.env, ...auth.env, GIT_TERMINAL_PROMPT: '0' },
    stdio: ['ignore', 'pipe', 'pipe'],
    shell: false,
    timeout: 300_000,
  });
  if (r.status === 0) return 0;
  const said = redact(`${r.stdout ?? ''}\n${r.stderr ?? ''}`, auth.secrets)
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('To ') && l !== 'Done')
    .slice(0, 20);
  process.stderr.write(`svc: the project's repository refused this push\n${said.map((l) => `svc:   ${l}\n`).join('')}`);
  return 1;
}

/**
 * Writes the hooks directory receive-pack is pointed at: `pre-receive` runs this module
 * with the running Node. Paths are ours (never user input), single-quoted for sh.
 */
export async function installHooks(dir: string): Promise<string> {
  const q = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
  const script = fileURLToPath(import.meta.url);
  await mkdir(dir, { recursive: true });
  const file = path.join(dir, 'pre-receive');
  const tmp = `${file}.${process.pid}.tmp`;
  await writeFile(tmp, `#!/bin/sh\nexec ${q(process.execPath)} ${q(script)} pre-receive\n`);
  await chmod(tmp, 0o755);
  await rename(tmp, file);
  return dir;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1]) && process.argv[2] === 'pre-receive') {
  process.exitCode = main();
}
