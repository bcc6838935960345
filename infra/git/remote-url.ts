import { DomainError } from '../../domain/errors.js';

/**
 * Remote URLs reach git as a positional argument after `--end-of-options`/`--`; they are
 * still checked so that only ordinary transports are used (no `ext::`, no `fd::`) and no
 * password can hide in them: credentials travel through the helper in ./credentials.ts.
 */
const SCHEMES = new Set(['file:', 'http:', 'https:', 'ssh:', 'git:']);
const SCP_LIKE = /^[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:[^-\s][^\s]*$/;

export function assertRemoteUrl(url: string): string {
  const bad = (why: string) =>
    new DomainError('validation', 'Validation failed', `Invalid repository URL: ${why}.`, {
      issues: [{ path: 'repo_url', message: why }],
    });
  if (typeof url !== 'string' || url.length === 0 || url.length > 2048) throw bad('must be 1 to 2048 characters');
  if (url.startsWith('-')) throw bad("must not start with '-'");
  // eslint-disable-next-line no-control-regex
  if (/[\x00-\x1f\x7f]/.test(url)) throw bad('must not contain control characters');
  if (SCP_LIKE.test(url)) return url;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw bad('not a URL');
  }
  if (!SCHEMES.has(parsed.protocol)) throw bad('scheme must be file, http, https, ssh or git');
  if (parsed.password !== '') throw bad('must not carry a password; configure credentials instead');
  if (parsed.protocol.startsWith('http') && parsed.username !== '') throw bad('must not carry a user; configure credentials instead');
  return url;
}
