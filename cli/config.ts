/**
 * The local config file: hosts, the active host, one token per host.
 * `~/.config/svc/config.json` or `SVC_CONFIG_FILE`; mode 0600; replaced atomically
 * (write a temp file beside it, then rename) so a crash never leaves half a file.
 */
import { mkdir, open, readFile, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { CliError } from './errors.js';
import type { Env } from './factory.js';

export interface HostEntry {
  /** API base without `/v1`. For a built-in host, overrides its default URL. */
  url?: string;
  token?: string;
  /** Who the token belongs to, as reported by /v1/accounts/me at login. */
  user?: string;
}

export interface ConfigData {
  active_host?: string;
  hosts: Record<string, HostEntry>;
}

export function configPath(env: Env, homedir: string): string {
  if (env.SVC_CONFIG_FILE) return env.SVC_CONFIG_FILE;
  const base = env.XDG_CONFIG_HOME || path.join(homedir, '.config');
  return path.join(base, 'svc', 'config.json');
}

function parse(text: string, file: string): ConfigData {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    throw new CliError(`config file ${file} is not valid JSON`, 'fix or delete it');
  }
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) throw new CliError(`config file ${file} is not a JSON object`);
  const obj = raw as Record<string, unknown>;
  const hosts: Record<string, HostEntry> = {};
  if (obj.hosts && typeof obj.hosts === 'object' && !Array.isArray(obj.hosts)) {
    for (const [name, v] of Object.entries(obj.hosts as Record<string, unknown>)) {
      if (!v || typeof v !== 'object') continue;
      const e = v as Record<string, unknown>;
      const entry: HostEntry = {};
      if (typeof e.url === 'string') entry.url = e.url;
      if (typeof e.token === 'string') entry.token = e.token;
      if (typeof e.user === 'string') entry.user = e.user;
      hosts[name] = entry;
    }
  }
  return typeof obj.active_host === 'string' ? { active_host: obj.active_host, hosts } : { hosts };
}

export async function readConfig(file: string): Promise<ConfigData> {
  try {
    return parse(await readFile(file, 'utf8'), file);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return { hosts: {} };
    throw e;
  }
}

export async function writeConfig(file: string, data: ConfigData): Promise<void> {
  const dir = path.dirname(file);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const tmp = path.join(dir, `.${path.basename(file)}.${process.pid}.${Date.now().toString(36)}.tmp`);
  const fh = await open(tmp, 'wx', 0o600);
  try {
    await fh.writeFile(JSON.stringify(data, null, 2) + '\n');
    // The mode given to open() is masked by the umask; make it exactly 0600.
    await fh.chmod(0o600);
    await fh.sync();
  } catch (e) {
    await fh.close();
    await rm(tmp, { force: true });
    throw e;
  }
  await fh.close();
  await rename(tmp, file);
}

/** Read-modify-write in one step. */
export async function updateConfig(file: string, fn: (c: ConfigData) => void): Promise<ConfigData> {
  const c = await readConfig(file);
  fn(c);
  await writeConfig(file, c);
  return c;
}
