import { egressRules } from '../../domain/manifest/egress.js';
import type { ProjectRecord } from '../../domain/project.js';
import type { EgressDecision, EgressList } from '../../infra/egress/policy.js';
import type { EgressIdentity } from '../../infra/egress/proxy.js';
import { egressQueries } from '../../sql/queries/egress.js';
import { projectQueries } from '../../sql/queries/projects.js';
import { handleSessionCommand } from './handle.js';
import { manifestInForce } from './sandbox-settings.js';
import type { SessionDeps } from './deps.js';
import { nowOf } from '../../lib/clock.js';

/**
 * The sessions' side of the egress proxy (infra/egress/proxy.ts): the project's
 * `[sandbox] egress` list in force for each connection, and refusals into the session's
 * history.
 */

/** The proxy's port and environment live with the sandbox plumbing (the providers set them). */
export { egressProxyEnv } from '../../infra/sandbox/gateway-dirs.js';

/**
 * The egress list in force for the sandbox's project, read for every connection (a merge
 * that changes `[sandbox] egress` applies to running sandboxes at their next connection).
 * null: the key is absent (the public internet). A project without a manifest row yet
 * reads `svc.toml` at its default branch's tip, as sandbox settings do.
 */
export function egressRulesFor(deps: Pick<SessionDeps, 'db' | 'repos'>): (id: EgressIdentity) => Promise<EgressList> {
  return async (id) => {
    const project = await deps.db.one<ProjectRecord>(projectQueries.byId(id.projectId));
    if (!project) return []; // no project, nothing to reach
    const entries = (await manifestInForce(deps, project))?.sandbox?.egress;
    return entries === undefined ? null : egressRules(entries);
  };
}

export interface EgressRefusals {
  /** Report one refusal; recorded unless this sandbox's session recorded one for the host within the minute. */
  record(id: EgressIdentity, refusal: Extract<EgressDecision, { ok: false }>): void;
  /** Resolves once every recording started so far has finished (tests, shutdown). */
  settled(): Promise<void>;
}

const WINDOW_MS = 60_000;
const MAX_TRACKED = 10_000;
const MAX_QUEUED = 1000;

/**
 * Refusals into the session's history as `SessionEgressRefused {host, port, reason}`, at
 * most once per (sandbox, host) per minute: a build retrying a refused registry in a loop
 * adds one line a minute, not thousands. Kept in this process's memory (bounded), so
 * with several API processes each may record one. Recording never delays the 403.
 */
export function egressRefusals(deps: Pick<SessionDeps, 'db' | 'logger' | 'now'>): EgressRefusals {
  const last = new Map<string, number>();
  let tail: Promise<void> = Promise.resolve();
  let queued = 0;
  const now = () => nowOf(deps);
  const log = deps.logger.child({ component: 'egress' });

  const prune = (t: number) => {
    for (const [k, at] of last) if (t - at >= WINDOW_MS) last.delete(k);
    // Still full: a flood of distinct hosts; forget the oldest (a host may then be recorded twice in a minute).
    for (const k of last.keys()) {
      if (last.size < MAX_TRACKED) break;
      last.delete(k);
    }
  };

  async function write(id: EgressIdentity, r: Extract<EgressDecision, { ok: false }>, at: Date): Promise<void> {
    const row = await deps.db.one<{ session_id: string }>(egressQueries.sessionOfSandbox(id.sandboxId, id.projectId));
    if (!row) return;
    await handleSessionCommand(deps.db, row.session_id, (s) =>
      s && !s.removed
        ? { type: 'RecordEgressRefused', data: { sandbox_id: id.sandboxId, host: r.host.slice(0, 300), port: r.port, reason: r.reason.slice(0, 500) }, meta: { actor: s.created_by, now: at } }
        : null,
    );
    log.info({ sandbox_id: id.sandboxId, session_id: row.session_id, host: r.host, port: r.port, rule: r.rule }, 'egress refused');
  }

  return {
    record(id, r) {
      const at = now();
      const t = at.getTime();
      const key = `${id.sandboxId}\n${r.host}`;
      const prev = last.get(key);
      if (prev !== undefined && t - prev < WINDOW_MS) return;
      if (last.size >= MAX_TRACKED) prune(t);
      last.delete(key); // re-inserted last: the map stays in time order for pruning
      last.set(key, t);
      if (queued >= MAX_QUEUED) return; // the database is behind: the 403 stands, the history skips it
      queued++;
      // One write at a time, in the order refused: the history reads in that order, and a
      // flood of distinct hosts queues here (bounded) instead of taking every pool connection.
      tail = tail
        .then(() => write(id, r, at))
        .catch((err: Error) => log.warn({ sandbox_id: id.sandboxId, err: err.message }, 'egress refusal not recorded'))
        .finally(() => queued--);
    },
    async settled() {
      await tail;
    },
  };
}
