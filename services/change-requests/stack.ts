import { assertBranchName } from '../../domain/refs.js';
import { isDomainError, notFound, validationError } from '../../domain/errors.js';
import { crNumberOf } from '../../domain/change-request/reference.js';
import { stackChain, stackNote, type ChangeRequest, type StackNode } from '../../domain/change-request/index.js';
import type { ProjectRecord } from '../../domain/project.js';
import { crOfRow, decodeCrRow } from '../../sql/queries/change-request-row.js';
import { crQueries } from '../../sql/queries/change-requests.js';
import { SYSTEM_ACTOR } from '../manifest/audit-log.js';
import { failpointAsync } from '../../lib/failpoints.js';
import { appendCheckEvents } from '../checks/stream.js';
import { commandInTx } from './handle.js';
import { withMergeLock } from './merge-lock.js';
import { editCr, findCr, refreshCr, type CrDeps } from './service.js';
import { nowOf } from '../../lib/clock.js';

/**
 * Stacked change requests (docs/stacks.md): a person's retarget, the server's retarget of
 * a merged parent's children, the chain, and the merge of a whole stack bottom-up through
 * the one merge path (request-merge.ts, merge.ts). The rules are the domain's
 * (domain/change-request/stack.ts); this reads what they decide on.
 */

const now = (deps: Pick<CrDeps, 'now'>) => nowOf(deps);

/** The tip of `ref`, or a 400 naming it when the branch does not exist. */
async function tipOf(deps: CrDeps, project: ProjectRecord, ref: string): Promise<string | null> {
  try {
    const tips = await deps.repos.for(project).readTips([ref]);
    const tip = tips[ref] ?? null;
    if (tip === null) throw validationError(`base_ref '${ref}' does not exist in the repository.`, [{ path: 'base_ref', message: 'branch not found' }]);
    return tip;
  } catch (err) {
    // Unreachable repository: retarget all the same; the next read anchors the tip.
    if (isDomainError(err) && err.code === 'unavailable') return null;
    throw err;
  }
}

/**
 * A new base for an open CR: `by` a person (their id; ambiguity or a cycle is a 400), or
 * the server (`'system'`). Under the merge lock of the CR's current base, like close: a
 * retarget never lands between a merge's push into that base and its record. The parent
 * is decided on the project's open CRs read under the project's stack lock.
 */
export async function retargetCr(
  deps: CrDeps,
  project: ProjectRecord,
  cr: ChangeRequest,
  baseRef: string,
  actor: string,
  by: 'system' | string,
  opts: { onlyIf?: (fresh: ChangeRequest) => boolean; via?: string | null } = {},
): Promise<ChangeRequest> {
  assertBranchName(baseRef, 'base_ref');
  const tip = await tipOf(deps, project, baseRef);
  return withMergeLock(deps, project.project_id, cr.base_ref, async (db) =>
    db.transaction(async (tx) => {
      await tx.run(crQueries.lockStacks(project.project_id));
      const stack = await tx.rows<StackNode>(crQueries.stackNodes(project.project_id));
      const done = await commandInTx(tx, project.project_id, cr.cr_id, (fresh) =>
        opts.onlyIf && !opts.onlyIf(fresh)
          ? null
          : { type: 'RetargetChangeRequest', data: { base_ref: baseRef, base_commit_sha: tip, by, stack }, meta: { actor, now: now(deps), session_id: opts.via ?? null } },
      );
      return done.cr;
    }),
  );
}

async function childrenOf(deps: Pick<CrDeps, 'db'>, projectId: string, ids: string[]): Promise<ChangeRequest[]> {
  if (ids.length === 0) return [];
  return (await deps.db.rows(crQueries.childrenOf(projectId, ids))).map((r) => crOfRow(decodeCrRow(r)));
}

/**
 * What a merge means for the stack around `merged` (run by the merge path once it is
 * recorded, and again by a read of the stack, so a crash in between loses nothing):
 *  - its open children still based on its head move onto its base, by the server
 *    (`ChangeRequestRetargeted {by: "system"}`): their diff is then their own commits, and
 *    their checks run on the new pair (the refresher queues them);
 *  - its parent, when it merged into the parent's branch, has a new head: it is refreshed,
 *    and a merge-when-green bound to the old head ends (`head_moved`; the seam where a
 *    merge queue's entry would end the same way).
 */
export async function settleAfterMerge(deps: CrDeps, project: ProjectRecord, merged: ChangeRequest): Promise<void> {
  if (merged.status !== 'merged') return;
  for (const child of await childrenOf(deps, project.project_id, [merged.cr_id])) {
    if (child.status !== 'open' || child.base_ref !== merged.head_ref) continue;
    await retargetCr(deps, project, child, merged.base_ref, SYSTEM_ACTOR, 'system', {
      onlyIf: (fresh) => fresh.status === 'open' && fresh.base_ref === merged.head_ref && fresh.parent_cr_id === merged.cr_id,
    });
  }
  if (!merged.parent_cr_id) return;
  const parent = await findCr(deps.db, project.project_id, merged.parent_cr_id).catch(() => null);
  if (!parent || parent.status !== 'open' || parent.head_ref !== merged.base_ref) return;
  const fresh = await refreshCr({ ...deps, refreshTimeoutMs: Math.max(deps.refreshTimeoutMs ?? 0, 10_000) }, project, parent, SYSTEM_ACTOR);
  const head = fresh.head_commit_sha;
  if (!head) return;
  await appendCheckEvents(deps, project.project_id, parent.cr_id, SYSTEM_ACTOR, (s) => {
    const a = s.checks.auto_merge;
    return a?.status === 'pending' && a.head_sha !== head
      ? [{ type: 'ChangeRequestAutoMergeCancelled', data: { head_sha: a.head_sha, cancelled_at: now(deps).toISOString(), reason: 'head_moved' } }]
      : [];
  });
}

export interface StackEntry {
  cr: ChangeRequest;
  /** A note for people (its parent closed unmerged: it waits for a person), or null. */
  note: string | null;
  children: string[];
}

/**
 * The chain of a CR: ancestors root first, the CR, its descendants. An ancestor merged
 * whose children were not moved yet (the merge's process died in between) is settled
 * first.
 */
export async function crStack(deps: CrDeps, project: ProjectRecord, ref: string): Promise<{ cr: ChangeRequest; stack: StackEntry[] }> {
  let cr = await findCr(deps.db, project.project_id, ref);
  const read = async () => {
    const byId = new Map<string, ChangeRequest>([[cr.cr_id, cr]]);
    for (let p = cr.parent_cr_id; p && !byId.has(p) && byId.size < 1000; ) {
      const parent = await findCr(deps.db, project.project_id, p).catch(() => null);
      if (!parent) break;
      byId.set(parent.cr_id, parent);
      p = parent.parent_cr_id;
    }
    const kids = new Map<string, ChangeRequest[]>();
    for (let level = [...byId.keys()]; level.length && byId.size < 1000; ) {
      const found = await childrenOf(deps, project.project_id, level);
      level = [];
      for (const c of found) {
        kids.set(c.parent_cr_id!, [...(kids.get(c.parent_cr_id!) ?? []), c]);
        if (!byId.has(c.cr_id)) {
          byId.set(c.cr_id, c);
          level.push(c.cr_id);
        }
      }
    }
    return { byId, kids };
  };
  let { byId, kids } = await read();
  const unsettled = [...byId.values()].filter((m) => m.status === 'merged' && (kids.get(m.cr_id) ?? []).some((c) => c.status === 'open' && c.base_ref === m.head_ref));
  if (unsettled.length) {
    // Settled as the merge would have; whatever fails here (a lock held, a branch gone) is
    // logged and the chain served as it stands: the next read tries again.
    for (const m of unsettled) await settleQuietly(deps, project, m);
    cr = await findCr(deps.db, project.project_id, cr.cr_id);
    ({ byId, kids } = await read());
  }
  const chain = stackChain(cr, (id) => byId.get(id), (id) => kids.get(id) ?? []);
  return {
    cr,
    stack: chain.map((c) => ({
      cr: c,
      note: stackNote(c, c.parent_cr_id ? (byId.get(c.parent_cr_id) ?? null) : null),
      children: (kids.get(c.cr_id) ?? []).map((k) => k.cr_id),
    })),
  };
}

/** Exposed for the merge path (merge.ts): what it runs after every recorded merge. */
export async function settleQuietly(deps: CrDeps, project: ProjectRecord, merged: ChangeRequest): Promise<void> {
  try {
    await failpointAsync('merge.before-stack'); // tests: the process dies between the merge's record and its stack
    await settleAfterMerge(deps, project, merged);
  } catch (err) {
    // The merge stands; a read of the stack settles what is left.
    deps.logger.warn({ cr_id: merged.cr_id, err: (err as Error).message }, 'stack not settled after a merge');
  }
}


/**
 * `PATCH …/change-requests/:crId`: title and description (editCr), and a new base
 * (`base_ref`, a person's retarget: the route refuses agents before this).
 */
export async function patchCr(
  deps: CrDeps,
  project: ProjectRecord,
  ref: string,
  actor: string,
  body: { title?: string | undefined; description?: string | undefined; base_ref?: string | undefined },
  via: string | null = null,
): Promise<ChangeRequest> {
  const { base_ref, ...edit } = body;
  let cr = await findCr(deps.db, project.project_id, ref);
  if (base_ref !== undefined) cr = await retargetCr(deps, project, cr, base_ref, actor, actor, { via });
  const data = { ...(edit.title !== undefined ? { title: edit.title } : {}), ...(edit.description !== undefined ? { description: edit.description } : {}) };
  if (Object.keys(data).length) cr = await editCr(deps, project, cr.cr_id, actor, data, via);
  return cr;
}

export interface FamilyMember {
  rel: 'parent' | 'child';
  cr_id: string;
  number: number;
  title: string;
  status: ChangeRequest['status'];
  head_ref: string;
  base_ref: string;
}

export interface Family {
  parent: FamilyMember | null;
  children: FamilyMember[];
  /** Its parent closed unmerged: it waits for a person. */
  note: string | null;
}

function familyOf(cr: ChangeRequest, rows: FamilyMember[]): Family {
  const parent = rows.find((r) => r.rel === 'parent') ?? null;
  const note = parent ? stackNote(cr, { ...cr, ...parent } as ChangeRequest) : null;
  return { parent, children: rows.filter((r) => r.rel === 'child'), note };
}

/**
 * A CR with its family (parent and children), for the dashboard's CR page: by number in
 * the one statement that reads the CR; by uuid, a second statement.
 */
export async function findCrWithFamily(deps: Pick<CrDeps, 'db'>, projectId: string, ref: string): Promise<{ cr: ChangeRequest; family: Family }> {
  const num = crNumberOf(ref);
  if (num === null) {
    const cr = await findCr(deps.db, projectId, ref);
    return { cr, family: familyOf(cr, await deps.db.rows<FamilyMember>(crQueries.family(projectId, cr.cr_id, cr.parent_cr_id))) };
  }
  const row = await deps.db.one<{ cr: Record<string, unknown>; family: FamilyMember[] }>(crQueries.byNumberWithFamily(projectId, num));
  if (!row) throw notFound('Change request');
  const cr = crOfRow(decodeCrRow(row.cr));
  return { cr, family: familyOf(cr, row.family) };
}
