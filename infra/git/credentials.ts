import { z } from 'zod';
import type { SecretBox } from '../secret-box.js';
import type { RepoLocation } from './port.js';

const storedCredentials = z.object({ username: z.string(), password: z.string() });

/**
 * A project's stored repository credentials, opened and checked: the one reader of
 * `repo_credentials_enc`. A value that is not what the API stored fails here, by name,
 * instead of reaching git as `undefined`.
 */
export function repoCredentials(secrets: SecretBox, project: { repo_credentials_enc: string | null }): { username: string; password: string } | undefined {
  if (!project.repo_credentials_enc) return undefined;
  const parsed = storedCredentials.safeParse(JSON.parse(secrets.open(project.repo_credentials_enc)));
  if (!parsed.success) throw new Error('the stored repository credentials are not a username and password');
  return parsed.data;
}

/**
 * Credentials reach git only through the environment of the one git process that needs
 * them: a credential helper given on the command line (`-c`, never written to any config
 * file) that prints two variables of its own environment. The argv therefore holds the
 * helper's text but never a secret, and the mirror's config never learns anything.
 *
 * The helper answers only for the protocol and host the credential was stored for: it is
 * scoped to that URL in git's config (`credential.<url>.helper`) and checks git's
 * `protocol=`/`host=` request lines itself, so a redirect to another host (or port) never
 * gets the password. Redirects are not followed either (see remote-repo.ts).
 */
const HELPER =
  '!f() { test "$1" = get || exit 0; p=; h=; while IFS== read -r k v; do case "$k" in protocol) p="$v";; host) h="$v";; esac; done; ' +
  'test "$p" = "$SVC_GIT_CRED_PROTOCOL" && test "$h" = "$SVC_GIT_CRED_HOST" || exit 0; ' +
  'echo "username=$SVC_GIT_USERNAME"; echo "password=$SVC_GIT_PASSWORD"; }; f';

export interface GitAuth {
  /** `-c` options that go before the git subcommand. */
  configArgs: string[];
  env: Record<string, string>;
  /** Values to redact from anything git prints. */
  secrets: string[];
}

/** `allowHttp` false: no credential is ever offered over plain http://. */
export function gitAuth(location: RepoLocation, opts: { allowHttp?: boolean } = {}): GitAuth {
  // The empty value first clears any helper git might otherwise consult.
  const configArgs = ['-c', 'credential.helper='];
  const s = sendableCredentials(location, opts);
  if (!s) return { configArgs, env: {}, secrets: [] };
  return {
    configArgs: [...configArgs, '-c', `credential.${s.protocol}://${s.host}.helper=${HELPER}`],
    env: { SVC_GIT_USERNAME: s.username, SVC_GIT_PASSWORD: s.password, SVC_GIT_CRED_PROTOCOL: s.protocol, SVC_GIT_CRED_HOST: s.host },
    secrets: [s.password],
  };
}

/**
 * The location's credentials with the protocol and host (with port) they may be sent to,
 * or null when none may be sent (none stored, not http(s), plain http not allowed). The
 * one rule for git's helper above and for the Node push (./http-push.ts).
 */
export function sendableCredentials(
  location: RepoLocation,
  opts: { allowHttp?: boolean } = {},
): { protocol: string; host: string; username: string; password: string } | null {
  const c = location.credentials;
  if (!c) return null;
  let u: URL;
  try {
    u = new URL(location.url);
  } catch {
    return null;
  }
  if (u.protocol !== 'https:' && !(u.protocol === 'http:' && opts.allowHttp !== false)) return null;
  return { protocol: u.protocol.slice(0, -1), host: u.host, username: c.username, password: c.password };
}
