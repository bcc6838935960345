import path from 'node:path';
import { startHttpBackend } from '../../bench/support/http-backend.js';
import type { FixtureRepo } from './repo.js';

/**
 * A fixture repository served over smart HTTP by `git http-backend` on 127.0.0.1: a
 * foreign git host whose own hooks run (the server never runs a `file://` repository's
 * hooks, so a test that needs a remote to refuse or hold a push serves it this way).
 * `url` carries the credentials the API splits off and seals.
 */
export async function serveOverHttp(repo: FixtureRepo): Promise<{ url: string; close(): Promise<void> }> {
  const password = 'fixture-remote-pw';
  const backend = await startHttpBackend(path.dirname(repo.bare), password, { user: 'x' });
  const u = new URL(`${backend.url}/${path.basename(repo.bare)}`);
  u.username = 'x';
  u.password = password;
  return { url: u.href, close: () => backend.close() };
}
