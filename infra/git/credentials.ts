import type { RepoLocation } from './port.js';

/**
 * Credentials reach git only through the environment of the one git process that needs
 * them: a credential helper given on the command line (`-c`, never written to any config
 * file) that prints two variables of its own environment. The argv therefore holds the
 * helper's text but never a secret, and the mirror's config never learns anything.
 */
const HELPER = '!f() { test "$1" = get || exit 0; echo "username=$SVC_GIT_USERNAME"; echo "password=$SVC_GIT_PASSWORD"; }; f';

export interface GitAuth {
  /** `-c` options that go before the git subcommand. */
  configArgs: string[];
  env: Record<string, string>;
  /** Values to redact from anything git prints. */
  secrets: string[];
}

export function gitAuth(location: RepoLocation): GitAuth {
  // The empty value first clears any helper git might otherwise consult.
  const configArgs = ['-c', 'credential.helper='];
  const c = location.credentials;
  if (!c) return { configArgs, env: {}, secrets: [] };
  return {
    configArgs: [...configArgs, '-c', `credential.helper=${HELPER}`],
    env: { SVC_GIT_USERNAME: c.username, SVC_GIT_PASSWORD: c.password },
    secrets: [c.password],
  };
}
