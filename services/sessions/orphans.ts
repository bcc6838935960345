/**
 * Sandboxes nobody means to run any more: left by an earlier provider (the operator
 * switched SVC_SANDBOX_PROVIDER), by a crash between a provider's create and the row that
 * records it, or by a stop whose teardown never ran. At start and on every sweep each
 * loadable provider lists the sandboxes carrying this install's id (`svc.install`, so two
 * installs sharing a Docker engine or a namespace never remove each other's), and every
 * one without a live row (requested or active) is destroyed by its own provider:
 * processes killed, directories removed, containers and pods deleted.
 */
import type { Executor } from '../../infra/db/db.js';
import { installQueries } from '../../sql/queries/install.js';
import type { SandboxHandle, SandboxProvider } from '../../infra/sandbox/port.js';
import type { SessionDeps } from './deps.js';

/** The label key every session sandbox carries with the install's id. */
export const INSTALL_LABEL = 'svc.install';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** This install's id (migration 066: one row, made with the database). */
export async function installIdOf(db: Executor): Promise<string> {
  const row = await db.one<{ install_id: string }>(installQueries.id());
  if (!row) throw new Error('install_identity has no row (migration 066 not applied)');
  return row.install_id;
}

export interface OrphanSweep {
  /** Per provider: how many it listed and how many of those it removed. */
  providers: { provider: string; listed: number; removed: number; error?: string }[];
}

export async function sweepOrphans(deps: Pick<SessionDeps, 'db' | 'logger' | 'provider' | 'providers'>): Promise<OrphanSweep> {
  const all: SandboxProvider[] = deps.providers?.loadable() ?? (deps.provider ? [deps.provider] : []);
  const out: OrphanSweep = { providers: [] };
  if (!all.length) return out;
  const install = await installIdOf(deps.db);
  for (const provider of all) {
    if (!provider.list) continue;
    let listed: SandboxHandle[];
    try {
      listed = await provider.list({ [INSTALL_LABEL]: install });
    } catch (err) {
      // An engine or cluster that does not answer now: its sandboxes wait for the next sweep.
      deps.logger.warn({ provider: provider.name, err: (err as Error).message }, 'orphan sweep: could not list sandboxes');
      out.providers.push({ provider: provider.name, listed: 0, removed: 0, error: (err as Error).message });
      continue;
    }
    const ids = listed.map((h) => h.sandboxId).filter((id) => UUID.test(id));
    const live = new Set((await deps.db.rows<{ sandbox_id: string }>(installQueries.liveSandboxes(ids))).map((r) => r.sandbox_id));
    let removed = 0;
    for (const h of listed) {
      if (live.has(h.sandboxId.toLowerCase())) continue;
      try {
        await provider.destroy(h);
        removed++;
        deps.logger.info({ provider: provider.name, sandbox_id: h.sandboxId, ref: h.ref }, 'orphan sandbox removed');
      } catch (err) {
        deps.logger.warn({ provider: provider.name, sandbox_id: h.sandboxId, err: (err as Error).message }, 'orphan sweep: could not remove a sandbox');
      }
    }
    out.providers.push({ provider: provider.name, listed: listed.length, removed });
  }
  return out;
}
