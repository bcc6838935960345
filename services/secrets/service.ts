import type { Db, Executor } from '../../infra/db/db.js';
import type { SecretBox } from '../../infra/secret-box.js';
import { notFound, validationError } from '../../domain/errors.js';
import { ENV_NAME, RESERVED_PREFIX } from '../../domain/manifest/schema.js';
import type { Manifest } from '../../domain/manifest/schema.js';
import type { SecretsListing } from '../../contracts/manifest.js';
import { manifestQueries, secretQueries } from '../../sql/queries/manifest.js';
import { appendLog } from '../manifest/audit-log.js';

/**
 * Project secrets: names and times are readable, values never leave the server except
 * into a sandbox's environment. Every change bumps the project's revision and is an event
 * naming the secret, never its value; a batch is one transaction.
 */
export interface SecretsDeps {
  db: Db;
  box: SecretBox;
  /** Told after a change commits (pushing env to running sandboxes: the sessions seam). */
  onChange?: (projectId: string, change: { set: string[]; unset: string[]; revision: number }) => void;
}

export const MAX_SECRET_BYTES = 64 * 1024;
export const MAX_BATCH = 500;

/** The AAD of a project secret: its project and name, so a ciphertext opens only in its own row. */
export const secretAad = (projectId: string, name: string) => `project-secret\0${projectId}\0${name}`;

export function assertSecretName(name: string, path = 'name'): string {
  if (typeof name !== 'string' || !ENV_NAME.test(name) || name.length > 256) {
    throw validationError(`Secret name '${String(name).slice(0, 100)}' must match ^[A-Z_][A-Z0-9_]*$ (at most 256 characters).`, [
      { path, message: 'must match ^[A-Z_][A-Z0-9_]*$' },
    ]);
  }
  if (name.startsWith(RESERVED_PREFIX)) {
    throw validationError(`Secret name '${name}' is refused: names beginning with ${RESERVED_PREFIX} are reserved for the platform.`, [
      { path, message: `names beginning with ${RESERVED_PREFIX} are reserved` },
    ]);
  }
  return name;
}

function assertValue(name: string, value: unknown, path: string): string {
  if (typeof value !== 'string') throw validationError(`The value of ${name} must be a string.`, [{ path, message: 'must be a string' }]);
  if (Buffer.byteLength(value, 'utf8') > MAX_SECRET_BYTES) {
    throw validationError(`The value of ${name} is larger than ${MAX_SECRET_BYTES} bytes.`, [{ path, message: 'too large' }]);
  }
  if (value.includes('\0')) throw validationError(`The value of ${name} contains a NUL byte, which no environment can hold.`, [{ path, message: 'contains NUL' }]);
  return value;
}

/** The listing of every secrets response: the contract's. */
export type { SecretsListing } from '../../contracts/manifest.js';

export async function listSecrets(db: Executor, projectId: string): Promise<SecretsListing> {
  const rows = await db.rows<{ name: string; updated_at: Date }>(secretQueries.list(projectId));
  const rev = await db.one<{ revision: number }>(secretQueries.revision(projectId));
  const m = (await db.one<{ manifest: Manifest | null }>(manifestQueries.get(projectId)))?.manifest ?? null;
  const have = new Set(rows.map((r) => r.name));
  const required = m?.env.required ?? [];
  return {
    secrets: rows.map((r) => ({ name: r.name, updated_at: new Date(r.updated_at).toISOString() })),
    env: { required, optional: m?.env.optional ?? [], missing: required.map((r) => r.name).filter((n) => !have.has(n)) },
    revision: Number(rev?.revision ?? 0),
  };
}

/** Sets and unsets in one transaction: all of it, or (on any bad name or value, or a name to unset that is not set) none of it. */
export async function changeSecrets(
  deps: SecretsDeps,
  projectId: string,
  actor: string,
  change: { set?: Record<string, unknown>; unset?: unknown[] },
): Promise<number> {
  const set = Object.entries(change.set ?? {});
  const unset = change.unset ?? [];
  if (set.length + unset.length > MAX_BATCH) {
    throw validationError(`At most ${MAX_BATCH} changes per request.`, [{ path: '(body)', message: `at most ${MAX_BATCH} changes (set and unset together)` }]);
  }
  set.forEach(([n, v]) => {
    assertSecretName(n, `set.${n}`);
    assertValue(n, v, `set.${n}`);
  });
  unset.forEach((n, i) => assertSecretName(n as string, `unset.${i}`));
  const both = set.map(([n]) => n).filter((n) => unset.includes(n));
  if (both.length) {
    throw validationError(
      `${both.join(', ')} cannot be both set and unset in one request.`,
      both.map((n) => ({ path: `unset.${unset.indexOf(n)}`, message: `${n} is also in set` })),
    );
  }
  if (set.length + unset.length === 0) {
    throw validationError('Nothing to change: give "set" or "unset".', [{ path: '(body)', message: 'set or unset is required (and not empty)' }]);
  }

  const revision = await deps.db.transaction(async (tx) => {
    const { revision } = (await tx.one<{ revision: number }>(secretQueries.bump(projectId)))!;
    const events: Array<{ type: string; data: Record<string, unknown> }> = [];
    for (const [name, value] of set) {
      await tx.run(secretQueries.upsert(projectId, name, deps.box.seal(value as string, secretAad(projectId, name))));
      events.push({ type: 'SecretSet', data: { name, revision: Number(revision) } });
    }
    for (const name of unset as string[]) {
      // Unsetting a name that is not there is a 404 and, rolled back with the rest, changes nothing.
      if (!(await tx.run(secretQueries.remove(projectId, name)))) throw notFound(`Secret ${name}`);
      events.push({ type: 'SecretUnset', data: { name, revision: Number(revision) } });
    }
    await appendLog(tx, 'secrets', projectId, events, actor);
    return Number(revision);
  });
  deps.onChange?.(projectId, { set: set.map(([n]) => n), unset: unset as string[], revision });
  return revision;
}

/** `PUT .../secrets/:name`: the name is the URL's, so a bad one is an issue on `name`, a bad value on `value`. */
export async function putSecret(deps: SecretsDeps, projectId: string, actor: string, name: string, value: unknown): Promise<void> {
  assertSecretName(name, 'name');
  assertValue(name, value, 'value');
  await changeSecrets(deps, projectId, actor, { set: { [name]: value } });
}

/** `DELETE .../secrets/:name`: a bad name is an issue on `name` (the URL parameter), not on an internal list. */
export async function deleteSecret(deps: SecretsDeps, projectId: string, actor: string, name: string): Promise<void> {
  assertSecretName(name, 'name');
  await changeSecrets(deps, projectId, actor, { unset: [name] });
}
