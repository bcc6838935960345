import { z } from 'zod';

/**
 * Just-in-time git credentials.
 *
 * `GET <SVC_API_URL>/projects/<SVC_PROJECT_ID>/git/clone-credential` with
 * `Authorization: Bearer <SVC_TOKEN>` answers
 * `{"username": "...", "password": "...", "expires_at": "<ISO-8601>"}`.
 *
 * The credential is handed to one git child through its environment and a credential
 * helper given on the command line of git's config-from-env mechanism
 * (`GIT_CONFIG_COUNT`/`GIT_CONFIG_KEY_n`/`GIT_CONFIG_VALUE_n`, git >= 2.31): it never
 * reaches `.git/config`, git's argv, or a log line. The helper script itself holds no
 * secret; it prints the two variables when git asks it to `get`.
 */

export const credentialSchema = z.object({
  username: z.string().min(1),
  password: z.string().min(1),
  expires_at: z.string().optional(),
});
export type GitCredential = z.infer<typeof credentialSchema>;

export class CredentialError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CredentialError';
  }
}

export interface CredentialSource {
  apiUrl: string | undefined;
  projectId: string | undefined;
  token: string;
}

/** Whether git needs a fetched credential for this remote (local paths and file:// do not). */
export function remoteNeedsCredential(url: string): boolean {
  return /^(https?|ssh|git):\/\//i.test(url) || /^[^/\\]+@[^/\\]+:/.test(url);
}

export async function fetchCloneCredential(src: CredentialSource, timeoutMs = 15_000): Promise<GitCredential> {
  if (!src.apiUrl || !src.projectId) {
    throw new CredentialError('SVC_API_URL and SVC_PROJECT_ID are needed to fetch a git credential');
  }
  const url = `${src.apiUrl}/projects/${encodeURIComponent(src.projectId)}/git/clone-credential`;
  let res: Response;
  try {
    res = await fetch(url, {
      headers: { authorization: `Bearer ${src.token}`, accept: 'application/json' },
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch (err) {
    throw new CredentialError(`clone-credential request failed: ${(err as Error).message}`);
  }
  if (!res.ok) {
    await res.body?.cancel().catch(() => undefined);
    throw new CredentialError(`clone-credential request answered ${res.status}`);
  }
  const parsed = credentialSchema.safeParse(await res.json().catch(() => undefined));
  if (!parsed.success) throw new CredentialError('clone-credential response is not {username, password, expires_at}');
  return parsed.data;
}

const HELPER =
  '!f() { test "$1" = get || exit 0; printf "username=%s\\npassword=%s\\n" "$SVC_GIT_USERNAME" "$SVC_GIT_PASSWORD"; }; f';

/** Environment for one git child that makes it answer auth prompts with `cred`. */
export function credentialEnv(cred: GitCredential): Record<string, string> {
  return {
    // An empty helper first resets any helper list inherited from system/global config.
    GIT_CONFIG_COUNT: '2',
    GIT_CONFIG_KEY_0: 'credential.helper',
    GIT_CONFIG_VALUE_0: '',
    GIT_CONFIG_KEY_1: 'credential.helper',
    GIT_CONFIG_VALUE_1: HELPER,
    SVC_GIT_USERNAME: cred.username,
    SVC_GIT_PASSWORD: cred.password,
  };
}
