import { startHttpBackend, type HttpBackend } from '../../../bench/support/http-backend.js';

/**
 * Serves the repositories under `root` over git's smart HTTP protocol on 127.0.0.1 (a
 * free port), with `git http-backend` as CGI behind HTTP basic auth: a foreign git host
 * for tests (the bench's floor, the same front).
 */
export type HttpGitServer = HttpBackend;

export function startHttpGitServer(root: string, user: string, password: string): Promise<HttpGitServer> {
  return startHttpBackend(root, password, { user, realm: 'svc-test' });
}
