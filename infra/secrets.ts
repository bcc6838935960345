import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';

/**
 * Secrets at rest: AES-256-GCM with a server key. The key comes from SVC_SECRET_KEY
 * (base64, 32 bytes) or, for the embedded default, a key file generated once in the data
 * dir (mode 0600). Ciphertext format: `v1.<iv>.<tag>.<data>`, base64url parts.
 */
export interface SecretBox {
  seal(plain: string): string;
  open(sealed: string): string;
}

export function secretBox(key: Buffer): SecretBox {
  if (key.length !== 32) throw new Error('secret key must be 32 bytes');
  return {
    seal(plain) {
      const iv = randomBytes(12);
      const c = createCipheriv('aes-256-gcm', key, iv);
      const data = Buffer.concat([c.update(plain, 'utf8'), c.final()]);
      return ['v1', iv, c.getAuthTag(), data].map((p) => (typeof p === 'string' ? p : p.toString('base64url'))).join('.');
    },
    open(sealed) {
      const [v, iv, tag, data] = sealed.split('.');
      if (v !== 'v1' || !iv || !tag || data === undefined) throw new Error('not a sealed secret');
      const d = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
      d.setAuthTag(Buffer.from(tag, 'base64url'));
      return Buffer.concat([d.update(Buffer.from(data, 'base64url')), d.final()]).toString('utf8');
    },
  };
}

export async function loadSecretKey(opts: { envKey?: string; dataDir: string }): Promise<Buffer> {
  if (opts.envKey) {
    const key = Buffer.from(opts.envKey, 'base64');
    if (key.length !== 32) throw new Error('SVC_SECRET_KEY must be 32 bytes, base64-encoded');
    return key;
  }
  const file = path.join(opts.dataDir, 'secret.key');
  const existing = await readFile(file, 'utf8').catch(() => null);
  if (existing) return Buffer.from(existing.trim(), 'base64');
  await mkdir(opts.dataDir, { recursive: true });
  const key = randomBytes(32);
  await writeFile(file, key.toString('base64'), { mode: 0o600, flag: 'wx' }).catch(async (err: NodeJS.ErrnoException) => {
    if (err.code !== 'EEXIST') throw err;
  });
  return Buffer.from((await readFile(file, 'utf8')).trim(), 'base64');
}
