/**
 * Stack branches: besides its session branch `<session id>`, an agent may push
 * `<session id>-<n>` (1 <= n <= STACK_BRANCH_MAX) to split its work into stacked change
 * requests. A dash, not a slash: git refuses a branch `X` and a branch `X/Y` side by side,
 * and the session branch exists first. Pure: the pre-receive hook (infra/git) and the
 * agent policy (services/tokens) both ask these.
 */
export const STACK_BRANCH_MAX = 20;

const UUID = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';
const SESSION = new RegExp(`^${UUID}$`);
/** `n` without a leading zero: one name per position, so `x-1` and `x-01` are never two branches. */
const STACK = new RegExp(`^(${UUID})-([1-9][0-9]?)$`);

export const isSessionBranch = (name: string): boolean => SESSION.test(name);

/** The session a stack branch belongs to and its position, or null when `name` is not one. */
export function parseStackBranch(name: string): { session: string; n: number } | null {
  const m = STACK.exec(name);
  if (!m) return null;
  const n = Number(m[2]);
  return n >= 1 && n <= STACK_BRANCH_MAX ? { session: m[1]!, n } : null;
}

/** Whether `name` is one of the branches session `session` may push: its own or one of its stack branches. */
export function isOwnBranch(session: string, name: string): boolean {
  return name === session || parseStackBranch(name)?.session === session;
}

/** Whether `name` is a stack branch of `session`. */
export const isOwnStackBranch = (session: string, name: string): boolean => parseStackBranch(name)?.session === session;

/** Session or stack branch of any session: never deleted, only fast-forwarded (history stays). */
export const isProtectedSessionBranch = (name: string): boolean => isSessionBranch(name) || parseStackBranch(name) !== null;
