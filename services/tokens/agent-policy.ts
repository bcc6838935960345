import { DomainError } from '../../domain/errors.js';
import type { Principal } from './service.js';
import { isOwnBranch, isOwnStackBranch } from '../../domain/stack-branches.js';

/**
 * What an agent-grade principal may do: the one place that says it (contracts.md "Agent
 * tokens, models, checks"). Everything obtainable inside a sandbox is agent-grade: its
 * SVC_CLI_TOKEN (= SVC_EXECUTOR_TOKEN) and every clone credential minted with its
 * SVC_TOKEN (the key itself authenticates nothing but the clone-credential route). An
 * agent assumes it is read whole by whatever runs in the sandbox, so it may:
 *  - read its project (every GET under it, smart HTTP fetch);
 *  - push its session branch and its stack branches `<session branch>-<n>` (1..20; create
 *    or fast-forward; enforced by infra/git/pre-receive.ts, which the smart HTTP route
 *    tells who pushes);
 *  - open CRs whose head is its session branch, or one of its stack branches based on its
 *    session branch or another of its stack branches (a stack, docs/stacks.md); edit,
 *    close or reopen the CRs of its session (head = one of its branches, origin_session_id
 *    = its session), and comment on those (its answer to a review round sent to it).
 * Nothing else: no merge (403 `agent_cannot_merge`, the CR goes to a person), no retarget
 * (`PATCH base_ref`: a pending merge is never redirected by an agent), no resolving
 * review comments, marking reviewed or sending to an agent (a person reviews), no secret
 * writes, budgets, triggers, apps, channels, statuses, project settings, sessions, token minting,
 * account routes or session proxy. A person's tokens (user tokens, and project tokens a
 * user mints with `POST .../cli-token`) pass every check here unchanged.
 */
export type AgentAction =
  /** A read of the project (GET). */
  | { kind: 'read' }
  | { kind: 'cr.open'; headRef: string; baseRef?: string | undefined; sessionId?: string | undefined }
  /** A new base for a CR (`PATCH base_ref`): people only, an agent never redirects a pending merge. */
  | { kind: 'cr.retarget' }
  /** Edit, close or reopen one CR. */
  | { kind: 'cr.change'; cr: { head_ref: string; origin_session_id: string | null } }
  | { kind: 'cr.merge' }
  /** Comment on one CR (its own session's: an agent answers the review of its work). */
  | { kind: 'cr.comment'; cr: { head_ref: string; origin_session_id: string | null } }
  /** Resolve or unresolve a review comment, send a CR to its agent, mark it reviewed: people only. */
  | { kind: 'cr.review' }
  /** Anything else, named for the message ("write secrets", "create sessions" ...). */
  | { kind: 'other'; what: string };

export const AGENT_CANNOT_MERGE_MESSAGE =
  'Agent credentials cannot merge change requests: hand this change request to a person, who reviews and merges it (`svc cr show` prints its link)';

export const agentCannotMerge = (): DomainError => new DomainError('agent_cannot_merge', 'Forbidden', AGENT_CANNOT_MERGE_MESSAGE);

const agentForbidden = (message: string): DomainError => new DomainError('agent_forbidden', 'Forbidden', message);

export const isAgent = (p: Principal): boolean => p.grade === 'agent';

/** Throws the typed refusal when `p` may not do `action`; a person may always (other rules still apply). */
export function assertMay(p: Principal, action: AgentAction): void {
  if (!isAgent(p)) return;
  const branch = p.session_id;
  switch (action.kind) {
    case 'read':
      return;
    case 'cr.merge':
      throw agentCannotMerge();
    case 'cr.open':
      if (!branch || !isOwnBranch(branch, action.headRef)) {
        throw agentForbidden(`Agent credentials open change requests from their own session branch or its stack branches only (head_ref '${branch ?? '(none)'}' or '${branch ?? '(none)'}-<n>').`);
      }
      // A stack branch's CR stacks on the agent's own work: its session branch or another of its stack branches.
      if (isOwnStackBranch(branch, action.headRef) && (action.baseRef === undefined || !isOwnBranch(branch, action.baseRef))) {
        throw agentForbidden(`Agent credentials open a change request from a stack branch only based on their session branch or another of its stack branches (base_ref '${branch}' or '${branch}-<n>').`);
      }
      if (action.sessionId !== undefined && action.sessionId !== p.session_id) {
        throw agentForbidden('Agent credentials open change requests for their own session only (session_id).');
      }
      return;
    case 'cr.retarget':
      throw agentForbidden("Agent credentials cannot change a change request's base: a person retargets it (a pending merge is never redirected by an agent).");
    case 'cr.change':
      if (!branch || !isOwnBranch(branch, action.cr.head_ref) || action.cr.origin_session_id !== p.session_id) {
        throw agentForbidden('Agent credentials edit, close or reopen only the change requests of their own session.');
      }
      return;
    case 'cr.comment':
      if (!branch || !isOwnBranch(branch, action.cr.head_ref) || action.cr.origin_session_id !== p.session_id) {
        throw agentForbidden('Agent credentials comment only on the change requests of their own session.');
      }
      return;
    case 'cr.review':
      throw agentForbidden('Agent credentials cannot resolve review comments, mark a change request reviewed or send it to an agent: a person reviews.');
    case 'other':
      throw agentForbidden(`Agent credentials cannot ${action.what}: ask a person to do it.`);
  }
}

/** The CR input an agent opens with: its own session recorded as the origin, always. */
export function openInputFor<T extends { head_ref: string; base_ref?: string | undefined; session_id?: string | undefined }>(p: Principal, input: T): T {
  assertMay(p, { kind: 'cr.open', headRef: input.head_ref, baseRef: input.base_ref, sessionId: input.session_id });
  return isAgent(p) ? { ...input, session_id: p.session_id! } : input;
}

/**
 * The agent action of an API request that no route refines (method and path under `/v1`),
 * for the gate in front of every route: reads pass, the CR commands are checked by their
 * routes (they need the CR or the body), everything else is refused. A new route is thus
 * refused to agents until it is listed here.
 */
export function agentActionOf(method: string, path: string): AgentAction | 'route-checks' {
  if (/^\/accounts(\/|$)/.test(path)) return { kind: 'other', what: 'call account routes' };
  if (method === 'GET' || method === 'HEAD') return { kind: 'read' };
  // Review: an agent comments (its route checks the CR); the rest is a person's.
  const review = /^\/projects\/[^/]+\/change-requests\/[^/]+\/(comments|send-to-agent|reviewed)(\/[^/]+)?\/?$/.exec(path);
  if (review) return review[1] === 'comments' && !review[2] && method === 'POST' ? 'route-checks' : { kind: 'cr.review' };
  const m = /^\/projects\/[^/]+(?:\/([^/]+)(?:\/([^/]+)(?:\/([^/]+))?)?)?\/?$/.exec(path);
  if (!m) return { kind: 'other', what: path === '/projects' || path === '/projects/' ? 'create projects' : 'do this' };
  const [, group, id, verb] = m;
  if (group === 'change-requests') {
    if (id === undefined && method === 'POST') return 'route-checks';
    if (id !== undefined && verb === undefined && method === 'PATCH') return 'route-checks';
    if (id !== undefined && (verb === 'close' || verb === 'reopen') && method === 'POST') return 'route-checks';
    if (id !== undefined && verb === 'merge' && method === 'POST') return { kind: 'cr.merge' };
    return { kind: 'other', what: 'do this to a change request' };
  }
  // Taking a CR out of the merge queue is deciding what merges: a person's, like the merge itself.
  if (group === 'merge-queue') return { kind: 'cr.merge' };
  const what: Record<string, string> = {
    secrets: 'write secrets',
    triggers: 'fire or change triggers',
    apps: 'deploy or change apps',
    channels: 'add or remove channels',
    statuses: 'post commit statuses',
    sessions: 'create, stop, restart, prompt or remove sessions',
    'cli-token': 'mint tokens',
    budget: 'set or remove budgets',
  };
  return { kind: 'other', what: (group && what[group]) ?? 'change project settings' };
}
