import { fetchCloneCredential } from './credential.js';

/**
 * `svc-agent git-credential get`: a git credential helper for the agent's own git
 * commands (`git push origin HEAD`). The clone leaves only this command in the repo's
 * `.git/config`; every time git needs to authenticate, the helper fetches a fresh
 * short-lived credential from the platform with SVC_TOKEN, and git keeps it in memory
 * for that one command. Nothing secret is ever stored.
 *
 * It answers only for the host of SVC_REPO_URL, and prints nothing (git then falls
 * back to its other helpers or fails) on any error.
 */
export async function runGitCredentialHelper(
  op: string | undefined,
  env: NodeJS.ProcessEnv,
  input: NodeJS.ReadableStream,
  output: NodeJS.WritableStream,
  errors: NodeJS.WritableStream,
): Promise<number> {
  if (op !== 'get') return 0; // store / erase: nothing is kept, nothing to forget
  const request = parseCredentialRequest(await readAll(input));
  const repo = safeUrl(env.SVC_REPO_URL);
  if (!repo || request.host !== repo.host || (request.protocol && `${request.protocol}:` !== repo.protocol)) return 0;
  try {
    const cred = await fetchCloneCredential({
      apiUrl: env.SVC_API_URL?.replace(/\/+$/, ''),
      projectId: env.SVC_PROJECT_ID,
      token: env.SVC_TOKEN ?? '',
    });
    output.write(`username=${cred.username}\npassword=${cred.password}\n`);
  } catch (err) {
    errors.write(`svc-agent git-credential: ${(err as Error).message}\n`);
  }
  return 0;
}

export function parseCredentialRequest(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const eq = line.indexOf('=');
    if (eq > 0) out[line.slice(0, eq)] = line.slice(eq + 1).replace(/\r$/, '');
  }
  return out;
}

function safeUrl(s: string | undefined): URL | undefined {
  try {
    return s ? new URL(s) : undefined;
  } catch {
    return undefined;
  }
}

function readAll(input: NodeJS.ReadableStream): Promise<string> {
  return new Promise((resolve) => {
    let s = '';
    input.setEncoding('utf8');
    input.on('data', (d: string) => (s += d));
    input.on('end', () => resolve(s));
    input.on('error', () => resolve(s));
  });
}

/** The `credential.helper` value that runs this helper with the current Node and script. */
export function helperCommand(nodePath: string, scriptPath: string): string {
  const q = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
  return `!${q(nodePath)} ${q(scriptPath)} git-credential`;
}
