import type { Executor } from '../../infra/db/db.js';
import { crNumberOf, type ChangeRequest } from '../../domain/change-request/index.js';
import type { ProjectRecord } from '../../domain/project.js';
import { notFound } from '../../domain/errors.js';
import { crOfRow } from '../../sql/queries/change-request-row.js';
import { crReadQueries, decodeCrReadRow } from '../../sql/queries/cr-read.js';
import { hashToken, looksLikeToken, principalOfTokenRow, type Principal } from '../tokens/service.js';
import { ownProjectOf, projectRefOf, userProjectOf } from '../projects/access.js';

/**
 * `GET` of a CR by number with its token, project and row read in one statement (issue 24
 * item 8, docs/speed.md "The open-CR read"): the same rules as the statement-per-step path
 * (the token's in services/tokens/service.ts, the project's in services/projects/access.ts,
 * `findCr`'s), applied to what the one row holds, in the same order. Nothing is cached:
 * a revoked token or a removed membership is seen by the very next read.
 */

/** What the one-statement read can answer: a project reference that can name a project and a CR number. */
export interface CrReadTarget {
  projectRef: string;
  number: number;
}

/** The read's target, or null when the references need the per-step path (a CR uuid, a reference no project can have). */
export function crReadTarget(projectRef: string, crRef: string): CrReadTarget | null {
  const number = crNumberOf(crRef);
  return number !== null && projectRefOf(projectRef) ? { projectRef, number } : null;
}

export interface CrReadLookup {
  principal: Principal;
  /**
   * The project and the CR as the principal may see them, to call once the principal has
   * passed the request's own checks: 404 for a user's project that is missing or another
   * account's, 403 for a project token of another project or whose user left the account,
   * then 404 for a missing CR.
   */
  resolve(): Promise<{ project: ProjectRecord; cr: ChangeRequest }>;
}

/** The read for bearer value `value`; null when it is no live token (401). */
export async function lookupCrRead(db: Executor, value: string, target: CrReadTarget): Promise<CrReadLookup | null> {
  if (!looksLikeToken(value)) return null;
  const ref = projectRefOf(target.projectRef)!;
  const hash = hashToken(value);
  const raw = await db.one(crReadQueries.withToken(hash, ref.ref, ref.isUuid, target.number));
  const row = raw && decodeCrReadRow(raw);
  const principal = row ? principalOfTokenRow(db, hash, row.token) : null;
  if (!row || !principal) return null;
  return {
    principal,
    async resolve() {
      const stored = row.project ?? undefined;
      // The rules of projectForCaller: a project token reaches only its own project, while
      // its user is a member; a user only the projects of their accounts (else 404).
      const project = principal.project_id
        ? await ownProjectOf(target.projectRef, stored?.project_id === principal.project_id ? stored : undefined, () => row.member)
        : userProjectOf(row.member ? stored : undefined);
      if (!row.cr) throw notFound('Change request');
      return { project, cr: crOfRow(row.cr) };
    },
  };
}
