import { readFile } from 'node:fs/promises';
import path from 'node:path';

export const DEFAULT_AGENT_CONFIG_DIR = '.svc/agent';

/**
 * Reads `[agent] config_dir` from the text of `svc.toml`. Only that one key is needed
 * here, so this is a line reader for the subset of TOML that can express it (a table
 * header, `key = "string"` or `'string'`, comments), not a TOML parser. Returns
 * undefined when the key is absent or not a plain string.
 */
export function readAgentConfigDir(toml: string): string | undefined {
  let table: string | undefined;
  for (const raw of toml.split(/\r?\n/)) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const header = /^\[\[?\s*([A-Za-z0-9_.\-"' ]+?)\s*\]\]?\s*(#.*)?$/.exec(line);
    if (header) {
      table = line.startsWith('[[') ? undefined : header[1]!.replace(/["' ]/g, '');
      continue;
    }
    if (table !== 'agent') continue;
    const kv = /^(?:config_dir|"config_dir"|'config_dir')\s*=\s*(?:"((?:[^"\\]|\\.)*)"|'([^']*)')\s*(#.*)?$/.exec(line);
    if (!kv) continue;
    if (kv[2] !== undefined) return kv[2];
    return unescapeBasic(kv[1]!);
  }
  return undefined;
}

function unescapeBasic(s: string): string {
  return s.replace(/\\(["\\\/bfnrt])/g, (_, c: string) =>
    ({ b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' })[c as 'b'] ?? c,
  );
}

/**
 * The absolute config dir for the runtime: `<workspace>/<config_dir>`. A value that is
 * absolute or climbs out of the workspace is refused (the repo does not get to point the
 * runtime elsewhere on the machine) and the default is used instead.
 */
export function resolveAgentConfigDir(
  workspace: string,
  configured: string | undefined,
): { dir: string; configured: string; fallback: boolean } {
  const candidate = configured?.trim();
  if (candidate) {
    const abs = path.resolve(workspace, candidate);
    const rel = path.relative(workspace, abs);
    if (!path.isAbsolute(candidate) && !rel.startsWith('..') && !path.isAbsolute(rel)) {
      return { dir: abs, configured: candidate, fallback: false };
    }
  }
  return {
    dir: path.join(workspace, DEFAULT_AGENT_CONFIG_DIR),
    configured: DEFAULT_AGENT_CONFIG_DIR,
    fallback: candidate !== undefined && candidate !== '',
  };
}

/** Reads `<workspace>/svc.toml` (absent file: default) and resolves the config dir. */
export async function loadAgentConfigDir(workspace: string): Promise<{ dir: string; configured: string; fallback: boolean }> {
  const text = await readFile(path.join(workspace, 'svc.toml'), 'utf8').catch(() => undefined);
  return resolveAgentConfigDir(workspace, text === undefined ? undefined : readAgentConfigDir(text));
}
