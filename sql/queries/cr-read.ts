import type { ProjectRecord } from '../../domain/project.js';
import type { Query } from '../query.js';
import { liveTokenByHash, type LiveTokenRow } from './accounts.js';
import { decodeCrRow, type CrRow } from './change-request-row.js';
import { PROJECT_COLUMN_NAMES } from './projects.js';

/**
 * `GET /v1/projects/:projectId/change-requests/:number` in one statement (issue 24 item 8,
 * docs/speed.md "The open-CR read"): the live token (`liveTokenByHash`, the text every
 * authenticated request runs), a project the reference names with whether the token's
 * user is a member of its account, and that project's CR by number. Nothing is decided
 * here: services/change-requests/read.ts applies the rules of the statement-per-step path
 * (services/projects/access.ts) to what the row holds. No row: no live token.
 *
 * The project, by uuid: the one with that id, whoever's it is (a primary-key probe; the
 * caller serves it only to a member, or to the project's own token). By slug: a project
 * token's own project when the slug is its own, else (a user token) the project with that
 * slug in the user's accounts, the earliest membership first, as
 * `projectQueries.byIdOrSlugForUser`.
 *
 * The token comes back as columns; the project (`project`, with `member`) and the CR
 * (`cr`) as the JSON of their rows (`to_json`; null when absent): two fields to describe
 * and parse instead of thirty-one, which is most of the client's cost of the row, and
 * cheaper for Postgres than building the objects column by column.
 */
const BY_ID = `SELECT tok.*, m.user_id IS NOT NULL AS member, to_json(p) AS project, to_json(c) AS cr
  FROM (${liveTokenByHash('$1')}) tok
    LEFT JOIN projects p ON p.project_id = $2::uuid
    LEFT JOIN memberships m ON m.account_id = p.account_id AND m.user_id = tok.user_id
    LEFT JOIN change_requests c ON c.project_id = p.project_id AND c.number = $3`;

const BY_SLUG = `SELECT tok.*, coalesce(p.member, false) AS member, p.project, to_json(c) AS cr
  FROM (${liveTokenByHash('$1')}) tok
    LEFT JOIN LATERAL (
      SELECT o.project_id, to_json(o) AS project,
          EXISTS (SELECT 1 FROM memberships m WHERE m.account_id = o.account_id AND m.user_id = tok.user_id) AS member
        FROM projects o WHERE o.project_id = tok.project_id AND o.slug = $2
      UNION ALL
      (SELECT u.project_id, to_json(u), true
        FROM memberships m JOIN projects u ON u.account_id = m.account_id AND u.slug = $2
        WHERE tok.project_id IS NULL AND m.user_id = tok.user_id
        ORDER BY m.created_at, u.account_id LIMIT 1)) p ON true
    LEFT JOIN change_requests c ON c.project_id = p.project_id AND c.number = $3`;

export const crReadQueries = {
  /** `ref`: a project uuid (lowercase, `isUuid`) or slug; `number`: the CR's number. */
  withToken: (hash: Buffer, ref: string, isUuid: boolean, number: number): Query => ({
    name: isUuid ? 'cr_read_by_project_id' : 'cr_read_by_project_slug',
    text: isUuid ? BY_ID : BY_SLUG,
    values: [hash, ref, number],
  }),
};

/** What one row of `withToken` holds. */
export interface CrReadRow {
  token: LiveTokenRow;
  /** The project (see the statements above). */
  project: ProjectRecord | null;
  /** Whether the token's user is a member of the project's account. */
  member: boolean;
  cr: CrRow | null;
}

export function decodeCrReadRow(r: Record<string, unknown>): CrReadRow {
  const { member, project, cr, ...token } = r as unknown as LiveTokenRow & { member: boolean; project: Record<string, unknown> | null; cr: Record<string, unknown> | null };
  return { token, project: project ? projectOfJson(project) : null, member, cr: cr ? decodeCrRow(cr) : null };
}

/** The project's columns as the per-step statements return them (created_at a Date; JSON carries its ISO text). */
function projectOfJson(j: Record<string, unknown>): ProjectRecord {
  const out: Record<string, unknown> = {};
  for (const c of PROJECT_COLUMN_NAMES) out[c] = j[c];
  out.created_at = new Date(j.created_at as string);
  return out as unknown as ProjectRecord;
}
