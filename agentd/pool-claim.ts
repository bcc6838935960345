import { chmod, mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';

/**
 * A pool sandbox (docs/sessions.md "Pool"): booted with its runtime running and no session,
 * no credential but its own control key. `POST /svc/claim` (with that key) makes it a
 * session's sandbox without restarting the runtime:
 *   - the control key rotates to the session's SVC_TOKEN (the pool key answers 401 after);
 *   - the session's variables (identity, tokens, secrets) reach the agent's shells through
 *     the login-shell profile (`~/.svc/session.env`, sourced by `~/.profile`,
 *     `~/.bash_profile` and `BASH_ENV`), and the runtime's environment for any later restart;
 *   - the model key goes to the daemon's model relay (model-relay.ts), which the runtime's
 *     provider calls: the runtime never held a key, its warmed-up state stays;
 *   - the workspace fetches the repository and checks out the session branch.
 */
const envName = /^[A-Za-z_][A-Za-z0-9_]*$/;

export const claimBody = z.strictObject({
  token: z.string().min(16).max(512),
  session_id: z.string().min(1).max(200),
  branch: z.string().min(1).max(255),
  base_ref: z.string().min(1).max(255).optional(),
  env: z.record(z.string().regex(envName).max(256), z.string().max(128 * 1024).refine((v) => !v.includes('\0'), 'contains a NUL byte')).default({}),
  llm_key: z.string().min(1).max(512).optional(),
  agent_name: z.string().min(1).max(200).optional(),
  agent_model: z.string().min(1).max(400).optional(),
});
export type ClaimBody = z.infer<typeof claimBody>;

/** The file a login shell sources; absent until the claim, so a pool sandbox's shells hold nothing. */
export const sessionEnvFile = (home: string) => path.join(home, '.svc', 'session.env');

const SOURCE_LINE = '[ -r "$HOME/.svc/session.env" ] && . "$HOME/.svc/session.env"';

/** At pool boot: every login shell (and every `bash -c`, through BASH_ENV) will source the session's file once it exists. */
export async function prepareShellProfile(home: string): Promise<Record<string, string>> {
  await mkdir(path.join(home, '.svc'), { recursive: true, mode: 0o700 });
  for (const name of ['.profile', '.bash_profile']) {
    const file = path.join(home, name);
    const text = await readFile(file, 'utf8').catch(() => '');
    if (!text.includes(SOURCE_LINE)) await writeFile(file, `${text}${text && !text.endsWith('\n') ? '\n' : ''}${SOURCE_LINE}\n`);
  }
  return { BASH_ENV: sessionEnvFile(home) };
}

const shellQuote = (v: string) => `'${v.replace(/'/g, `'\\''`)}'`;

/** Writes the session's variables for the agent's shells (mode 600, written whole then renamed). */
export async function writeSessionEnv(home: string, env: Record<string, string>): Promise<void> {
  const file = sessionEnvFile(home);
  await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
  const body = Object.entries(env)
    .filter(([k]) => envName.test(k))
    .map(([k, v]) => `export ${k}=${shellQuote(v)}`)
    .join('\n');
  const tmp = `${file}.${process.pid}.tmp`;
  await writeFile(tmp, `${body}\n`, { mode: 0o600 });
  await chmod(tmp, 0o600);
  await rename(tmp, file);
}
