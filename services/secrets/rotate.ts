import type { Db } from '../../infra/db/db.js';
import type { SecretBox } from '../../infra/secret-box.js';
import { secretQueries } from '../../sql/queries/manifest.js';
import { secretAad } from './service.js';

export interface RotationReport {
  key_id: string;
  resealed: number;
  already_current: number;
  /** Rows changed by a writer while rotating: already sealed under the current key by that writer. */
  skipped_concurrent: number;
}

/**
 * Re-encrypts every sealed value (project secrets, repository credentials) under the
 * box's current key. Each row is swapped only if it still holds the ciphertext that was
 * read (compare-and-swap), so concurrent writes are never overwritten and nothing is
 * locked for longer than one row update: the server keeps serving throughout, reading
 * old ciphertexts with the older keys still in the keyring.
 */
export async function rotateSecrets(db: Db, box: SecretBox): Promise<RotationReport> {
  const report: RotationReport = { key_id: box.keyId, resealed: 0, already_current: 0, skipped_concurrent: 0 };
  let after = { project: '00000000-0000-0000-0000-000000000000', name: '' };
  for (;;) {
    const page = await db.rows<{ project_id: string; name: string; value_enc: string }>(secretQueries.page(after.project, after.name, 200));
    if (page.length === 0) break;
    for (const r of page) {
      if (box.keyIdOf(r.value_enc) === box.keyId) {
        report.already_current++;
        continue;
      }
      const aad = secretAad(r.project_id, r.name);
      const next = box.seal(box.open(r.value_enc, aad), aad);
      if (await db.run(secretQueries.reseal(r.project_id, r.name, r.value_enc, next))) report.resealed++;
      else report.skipped_concurrent++;
    }
    const last = page[page.length - 1]!;
    after = { project: last.project_id, name: last.name };
  }
  for (const r of await db.rows<{ project_id: string; repo_credentials_enc: string }>(secretQueries.repoCredentials())) {
    if (box.keyIdOf(r.repo_credentials_enc) === box.keyId) {
      report.already_current++;
      continue;
    }
    const next = box.seal(box.open(r.repo_credentials_enc));
    if (await db.run(secretQueries.resealRepoCredentials(r.project_id, r.repo_credentials_enc, next))) report.resealed++;
    else report.skipped_concurrent++;
  }
  return report;
}
