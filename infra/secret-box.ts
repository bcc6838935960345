import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';

/**
 * Secrets at rest: AES-256-GCM, a fresh 96-bit nonce per value, and optional associated
 * data (project secrets bind their project and name, so a ciphertext copied to another
 * row does not open). Ciphertext: `v2.<key id>.<iv>.<tag>.<data>` (base64url parts; the
 * key id is the first 8 bytes of sha256(key), hex); `v1.<iv>.<tag>.<data>` (no key id, no
 * AAD) from before key rotation is still read.
 *
 * Keys: a keyring, newest first; the first seals, any of them opens. From SVC_SECRET_KEY
 * (comma-separated base64 keys, first = current) or the key file in the data dir (one
 * base64 key per line, first = current), generated once with mode 0600.
 * `svc-server admin rotate-key` puts a new key first and re-encrypts every value
 * (services/secrets/rotate.ts); a running server re-reads the key file when it changes, so
 * nothing stops while that happens.
 */
export interface SecretBox {
  seal(plain: string, aad?: string): string;
  open(sealed: string, aad?: string): string;
  /** Key id of the current (sealing) key. */
  readonly keyId: string;
  /** Key id a ciphertext was sealed with; null for v1 values. */
  keyIdOf(sealed: string): string | null;
}

export const keyIdOf = (key: Buffer) => createHash('sha256').update(key).digest().subarray(0, 8).toString('hex');

/** Keys, newest first; `reload` (optional) re-reads them when the source may have changed. */
export interface Keyring {
  keys(): Buffer[];
}

export function staticKeyring(keys: Buffer[]): Keyring {
  if (keys.length === 0) throw new Error('no secret key');
  for (const k of keys) if (k.length !== 32) throw new Error('secret key must be 32 bytes');
  return { keys: () => keys };
}

/** A key file re-read (at most once a second) when its mtime or size changes. */
export function fileKeyring(file: string): Keyring {
  let cached: Buffer[] = [];
  let stamp = '';
  let checked = 0;
  const load = () => {
    const now = performance.now();
    if (cached.length > 0 && now - checked < 1000) return cached;
    checked = now;
    const st = statSync(file);
    const s = `${st.mtimeMs}:${st.size}`;
    if (s !== stamp) {
      const keys = parseKeyLines(readFileSync(file, 'utf8'), file);
      cached = keys;
      stamp = s;
    }
    return cached;
  };
  return { keys: load };
}

export function parseKeyLines(text: string, where: string): Buffer[] {
  const keys = text
    .split(/[\n,]/)
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'))
    .map((l) => Buffer.from(l, 'base64'));
  if (keys.length === 0) throw new Error(`${where}: no key`);
  if (keys.some((k) => k.length !== 32)) throw new Error(`${where}: every key must be 32 bytes, base64-encoded`);
  return keys;
}

export function secretBox(source: Buffer | Keyring): SecretBox {
  const ring = Buffer.isBuffer(source) ? staticKeyring([source]) : source;
  const current = () => ring.keys()[0]!;
  const byId = (kid: string) => ring.keys().find((k) => keyIdOf(k) === kid);
  return {
    get keyId() {
      return keyIdOf(current());
    },
    seal(plain, aad) {
      const key = current();
      const iv = randomBytes(12);
      const c = createCipheriv('aes-256-gcm', key, iv);
      c.setAAD(Buffer.from(`v2\0${aad ?? ''}`, 'utf8'));
      const data = Buffer.concat([c.update(plain, 'utf8'), c.final()]);
      return ['v2', keyIdOf(key), iv.toString('base64url'), c.getAuthTag().toString('base64url'), data.toString('base64url')].join('.');
    },
    open(sealed, aad) {
      const parts = sealed.split('.');
      if (parts[0] === 'v2' && parts.length === 5) {
        const [, kid, iv, tag, data] = parts as [string, string, string, string, string];
        const key = byId(kid);
        if (!key) throw new Error(`secret sealed with key ${kid}, which this server does not have`);
        return decrypt(key, iv, tag, data, `v2\0${aad ?? ''}`);
      }
      if (parts[0] === 'v1' && parts.length === 4) {
        const [, iv, tag, data] = parts as [string, string, string, string];
        for (const key of ring.keys()) {
          try {
            return decrypt(key, iv, tag, data, null);
          } catch {
            /* try the next key */
          }
        }
        throw new Error('no key opens this secret');
      }
      throw new Error('not a sealed secret');
    },
    keyIdOf(sealed) {
      const parts = sealed.split('.');
      return parts[0] === 'v2' ? (parts[1] ?? null) : null;
    },
  };
}

function decrypt(key: Buffer, iv: string, tag: string, data: string, aad: string | null): string {
  const d = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
  if (aad !== null) d.setAAD(Buffer.from(aad, 'utf8'));
  d.setAuthTag(Buffer.from(tag, 'base64url'));
  return Buffer.concat([d.update(Buffer.from(data, 'base64url')), d.final()]).toString('utf8');
}

export const keyFileOf = (dataDir: string) => path.join(dataDir, 'secret.key');

/** The keyring the config names: SVC_SECRET_KEY, else the data dir's key file (created once). */
export async function loadKeyring(opts: { envKey?: string; dataDir: string }): Promise<Keyring> {
  if (opts.envKey) return staticKeyring(parseKeyLines(opts.envKey, 'SVC_SECRET_KEY'));
  await loadSecretKey(opts);
  return fileKeyring(keyFileOf(opts.dataDir));
}

/** The current key (creating the key file on first use). */
export async function loadSecretKey(opts: { envKey?: string; dataDir: string }): Promise<Buffer> {
  if (opts.envKey) return parseKeyLines(opts.envKey, 'SVC_SECRET_KEY')[0]!;
  const file = keyFileOf(opts.dataDir);
  const existing = await readFile(file, 'utf8').catch(() => null);
  if (existing) return parseKeyLines(existing, file)[0]!;
  await mkdir(opts.dataDir, { recursive: true });
  const key = randomBytes(32);
  await writeFile(file, key.toString('base64'), { mode: 0o600, flag: 'wx' }).catch(async (err: NodeJS.ErrnoException) => {
    if (err.code !== 'EEXIST') throw err;
  });
  return parseKeyLines(await readFile(file, 'utf8'), file)[0]!;
}

/** Puts a fresh key first in the key file (atomically), keeping the older ones for reading. */
export async function addKeyToFile(dataDir: string): Promise<string> {
  const file = keyFileOf(dataDir);
  await loadSecretKey({ dataDir });
  const old = parseKeyLines(await readFile(file, 'utf8'), file);
  const key = randomBytes(32);
  const tmp = `${file}.${process.pid}.tmp`;
  await writeFile(tmp, [key, ...old].map((k) => k.toString('base64')).join('\n') + '\n', { mode: 0o600 });
  await rename(tmp, file);
  return keyIdOf(key);
}
