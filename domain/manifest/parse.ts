import { createHash } from 'node:crypto';
import { parse as parseToml, TomlError } from 'smol-toml';
import { APP_LABEL_NAME_MAX, KNOWN_KEYS, ManifestSchema, RESERVED_PREFIX, type AppSpec, type Manifest } from './schema.js';

export interface ManifestIssue {
  path: string;
  message: string;
}

export interface ParsedManifest {
  /** Null when the file does not parse or validate. */
  manifest: Manifest | null;
  errors: ManifestIssue[];
  warnings: ManifestIssue[];
}

export const MANIFEST_PATH = 'svc.toml';
export const MAX_MANIFEST_BYTES = 256 * 1024;

/** Pure: TOML text in, a validated manifest (or the reasons it is not one) out. */
export function parseManifest(text: string): ParsedManifest {
  if (Buffer.byteLength(text, 'utf8') > MAX_MANIFEST_BYTES) {
    return { manifest: null, errors: [{ path: '(file)', message: `larger than ${MAX_MANIFEST_BYTES} bytes` }], warnings: [] };
  }
  let raw: Record<string, unknown>;
  try {
    raw = parseToml(text) as Record<string, unknown>;
  } catch (e) {
    const where = e instanceof TomlError ? `line ${e.line}, column ${e.column}` : '(file)';
    const message = (e instanceof Error ? e.message : String(e)).split('\n')[0]!;
    return { manifest: null, errors: [{ path: where, message: `invalid TOML: ${message}` }], warnings: [] };
  }
  const warnings = unknownKeys(raw);
  const parsed = ManifestSchema.safeParse(raw);
  if (!parsed.success) {
    return {
      manifest: null,
      errors: parsed.error.issues.map((i) => ({ path: i.path.join('.') || '(file)', message: i.message })),
      warnings,
    };
  }
  const m = parsed.data;
  for (const [kind, list] of [['required', m.env.required], ['optional', m.env.optional]] as const) {
    list.forEach((e) => {
      if (e.name.startsWith(RESERVED_PREFIX)) {
        warnings.push({ path: `env.${kind}.${e.name}`, message: `names beginning with ${RESERVED_PREFIX} are reserved for the platform; a secret cannot be set under this name` });
      }
    });
  }
  m.apps.forEach((a, i) => {
    if (a.name.length > APP_LABEL_NAME_MAX) {
      warnings.push({ path: `apps.${i}.name`, message: `longer than ${APP_LABEL_NAME_MAX} characters: with the project's id it does not fit one DNS label, so the app is served at a shortened, hashed name (its URL is on the apps page)` });
    }
    for (const name of Object.keys(a.env ?? {})) {
      if (name.startsWith(RESERVED_PREFIX)) warnings.push({ path: `apps.${i}.env.${name}`, message: `names beginning with ${RESERVED_PREFIX} are reserved for the platform` });
    }
  });
  if (m.sandbox.image && m.sandbox.dockerfile) {
    warnings.push({ path: 'sandbox.dockerfile', message: 'ignored: sandbox.image is set, and an image wins over a Dockerfile' });
  }
  return { manifest: m, errors: [], warnings };
}

function unknownKeys(raw: Record<string, unknown>): ManifestIssue[] {
  const out: ManifestIssue[] = [];
  const check = (obj: unknown, table: string, at: string) => {
    if (!obj || typeof obj !== 'object' || Array.isArray(obj)) return;
    for (const k of Object.keys(obj)) {
      if (!KNOWN_KEYS[table]!.includes(k)) out.push({ path: at ? `${at}.${k}` : k, message: 'unknown key (ignored)' });
    }
  };
  check(raw, '', '');
  for (const t of ['agent', 'env', 'sandbox', 'review', 'merge_queue']) check(raw[t], t, t);
  for (const t of ['triggers', 'apps', 'checks']) {
    const list = raw[t];
    if (Array.isArray(list)) list.forEach((item, i) => check(item, t, `${t}.${i}`));
  }
  return out;
}

/** The hash of one `[[apps]]` entry: a change to any of its fields changes it; key order does not. */
export function appHash(app: AppSpec): string {
  const canonical = JSON.stringify({
    name: app.name,
    command: app.command,
    port: app.port,
    env: Object.fromEntries(Object.entries(app.env ?? {}).sort(([a], [b]) => (a < b ? -1 : 1))),
    health_path: app.health_path ?? null,
    // Only when given: the hash of an entry written before `public` existed stays the same.
    ...(app.public !== undefined ? { public: app.public } : {}),
  });
  return createHash('sha256').update(canonical).digest('hex');
}
