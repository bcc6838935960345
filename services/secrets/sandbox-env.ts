import type { Executor } from '../../infra/db/db.js';
import type { SecretBox } from '../../infra/secret-box.js';
import { secretQueries } from '../../sql/queries/manifest.js';
import { secretAad } from './service.js';

/**
 * A project's secrets as a sandbox receives them: plain env vars, plus the names (for
 * SVC_PROJECT_SECRET_NAMES) and the revision (SVC_PROJECT_SECRETS_REVISION). The only
 * place values are opened. Never log the result.
 */
export async function sandboxSecrets(
  db: Executor,
  box: SecretBox,
  projectId: string,
): Promise<{ env: Record<string, string>; names: string[]; revision: number }> {
  const rows = await db.rows<{ name: string; value_enc: string }>(secretQueries.values(projectId));
  const rev = await db.one<{ revision: number }>(secretQueries.revision(projectId));
  const env: Record<string, string> = {};
  for (const r of rows) env[r.name] = box.open(r.value_enc, secretAad(projectId, r.name));
  return { env, names: rows.map((r) => r.name), revision: Number(rev?.revision ?? 0) };
}

