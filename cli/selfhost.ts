/**
 * `svc self-host`: the compose stack (ops/compose.yaml) on this machine. Its config lives
 * in `~/.svc/selfhost/svc.env` (mode 0600): generated keys, the port, and the optional
 * integrations. Compose runs as `<runtime> -p svc-selfhost -f <cli>/ops/compose.yaml
 * --env-file <env file>`, with `docker compose`, `docker-compose` or `podman compose`
 * (`SVC_COMPOSE` overrides the detection, e.g. `SVC_COMPOSE="podman compose"`;
 * `SVC_SELFHOST_PROJECT` names another compose project, for a second stack on one machine).
 */
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, open, readFile, rename } from 'node:fs/promises';
import path from 'node:path';
import { CliError } from './errors.js';
import type { Factory } from './factory.js';
import { cliRoot, runCapture, svcHome } from './install.js';

export const PROJECT_NAME = 'svc-selfhost';

/** The compose project: `SVC_SELFHOST_PROJECT` when set (compose's own rule for names), else svc-selfhost. */
export function projectName(f: Factory): string {
  const name = f.env.SVC_SELFHOST_PROJECT;
  if (name === undefined || name === '') return PROJECT_NAME;
  if (!/^[a-z0-9][a-z0-9_-]{0,62}$/.test(name)) throw new CliError(`invalid SVC_SELFHOST_PROJECT "${name}"`, 'use lowercase letters, digits, - and _');
  return name;
}
export const composeFile = () => path.join(cliRoot, 'ops', 'compose.yaml');
export const selfhostDir = (f: Factory) => path.join(svcHome(f.env), 'selfhost');
export const envFilePath = (f: Factory) => path.join(selfhostDir(f), 'svc.env');

/** One line of the env file: a variable, or anything else kept verbatim (comments, blanks). */
type Line = { key: string; value: string } | { raw: string };

export interface EnvFile {
  lines: Line[];
  get(key: string): string | undefined;
  set(key: string, value: string): void;
  entries(): Array<[string, string]>;
}

const KEY = /^[A-Za-z_][A-Za-z0-9_]*$/;

function unquote(v: string): string {
  const t = v.trim();
  if (t.length >= 2 && ((t.startsWith('"') && t.endsWith('"')) || (t.startsWith("'") && t.endsWith("'")))) return t.slice(1, -1);
  return t;
}

export function parseEnv(text: string): EnvFile {
  const lines: Line[] = text
    .split('\n')
    .filter((l, i, all) => !(i === all.length - 1 && l === ''))
    .map((l) => {
      const m = /^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=(.*)$/.exec(l);
      return m ? { key: m[1]!, value: unquote(m[2]!) } : { raw: l };
    });
  const vars = () => lines.filter((l): l is { key: string; value: string } => 'key' in l);
  return {
    lines,
    get: (key) => vars().find((l) => l.key === key)?.value,
    set(key, value) {
      const found = vars().find((l) => l.key === key);
      if (found) found.value = value;
      else lines.push({ key, value });
    },
    entries: () => vars().map((l) => [l.key, l.value]),
  };
}

/** Values are written bare: compose's env-file format takes the rest of the line as-is. */
export function renderEnv(env: EnvFile): string {
  return env.lines.map((l) => ('key' in l ? `${l.key}=${l.value}` : l.raw)).join('\n') + '\n';
}

export function validKey(key: string): boolean {
  return KEY.test(key);
}

export async function readEnvFile(f: Factory): Promise<EnvFile | null> {
  try {
    return parseEnv(await readFile(envFilePath(f), 'utf8'));
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw e;
  }
}

/** Replaced atomically, mode 0600 whatever the umask. */
export async function writeEnvFile(f: Factory, env: EnvFile): Promise<void> {
  const dir = selfhostDir(f);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const file = envFilePath(f);
  const tmp = `${file}.${process.pid}.tmp`;
  const fh = await open(tmp, 'w', 0o600);
  try {
    await fh.writeFile(renderEnv(env));
    await fh.chmod(0o600);
  } finally {
    await fh.close();
  }
  await rename(tmp, file);
  await chmod(file, 0o600);
}

/** A fresh config: generated keys and the defaults the stack needs. */
export function newEnv(): EnvFile {
  const env = parseEnv(
    [
      '# svc self-host configuration (svc self-host env ls | env set KEY=VALUE). Mode 0600: it holds secrets.',
      '# Any server variable from README.md "Configuration" may be added here.',
    ].join('\n'),
  );
  env.set('POSTGRES_PASSWORD', randomBytes(24).toString('base64url'));
  env.set('SVC_SECRET_KEY', randomBytes(32).toString('base64'));
  env.set('SVC_PORT', '8080');
  env.set('SVC_PUBLIC_URL', 'http://localhost:8080');
  env.set('SVC_ADMIN_EMAIL', 'admin@selfhost.local');
  env.set('LOG_LEVEL', 'info');
  return env;
}

/** Names that hold credentials: `env ls` masks their values when set. */
export function isSecret(key: string): boolean {
  return /(PASSWORD|SECRET|TOKEN|PRIVATE|_KEY$|^KEY$|WEBHOOK)/i.test(key);
}

export function mask(value: string): string {
  return value === '' ? '' : `${'*'.repeat(8)}${value.length > 12 ? value.slice(-4) : ''}`;
}

/** The optional integrations the first interactive setup asks about (keys left for `env set`). */
export const INTEGRATIONS = {
  appDeployment: ['SVC_APPS_ENABLED', 'SVC_APPS_DOMAIN'],
  githubApp: ['SVC_GITHUB_APP_ID', 'SVC_GITHUB_APP_PRIVATE_KEY'],
  pat: ['SVC_GIT_TOKEN'],
  connectors: ['SVC_CONNECTORS_ENABLED', 'SVC_SLACK_CLIENT_ID', 'SVC_SLACK_CLIENT_SECRET'],
} as const;

export async function askIntegrations(f: Factory, env: EnvFile): Promise<string[]> {
  const toFill: string[] = [];
  const want = (keys: readonly string[], enabledKey?: string) => {
    for (const k of keys) {
      if (k === enabledKey) env.set(k, '1');
      else if (env.get(k) === undefined || env.get(k) === '') {
        env.set(k, env.get(k) ?? '');
        toFill.push(k);
      }
    }
  };
  f.io.err.write('Optional integrations (all can be changed later with svc self-host configure):\n');
  if (await f.prompter.confirm('Enable app deployment?', false)) want(INTEGRATIONS.appDeployment, 'SVC_APPS_ENABLED');
  const repo = await f.prompter.select('Access to private repositories', ['none (public and managed repositories only)', 'a GitHub App', 'a personal access token (PAT)'], 0);
  if (repo === 1) want(INTEGRATIONS.githubApp);
  if (repo === 2) want(INTEGRATIONS.pat);
  if (await f.prompter.confirm('Enable app connectors (Slack)?', false)) want(INTEGRATIONS.connectors, 'SVC_CONNECTORS_ENABLED');
  return toFill;
}

/** Interactive setup only on a terminal, and never under --yes or CI. */
export function interactive(f: Factory, yes: boolean): boolean {
  const ci = f.env.CI !== undefined && f.env.CI !== '' && f.env.CI !== '0' && f.env.CI !== 'false';
  return !yes && !ci && f.io.stdinIsTTY && f.io.stderrIsTTY;
}

export async function detectCompose(f: Factory): Promise<string[]> {
  if (f.env.SVC_COMPOSE) return f.env.SVC_COMPOSE.split(/\s+/).filter(Boolean);
  for (const cmd of [['docker', 'compose'], ['docker-compose'], ['podman', 'compose']]) {
    const r = await runCapture(f, cmd[0]!, [...cmd.slice(1), 'version']).catch(() => null);
    if (r?.code === 0) return cmd;
  }
  throw new CliError('no container compose runtime found', 'install Docker with the compose plugin (or docker-compose), or Podman with podman-compose; or set SVC_COMPOSE');
}

/** `<runtime> -p <project> -f compose.yaml --env-file svc.env <args...>` and its environment. */
export function composeArgs(f: Factory, runtime: string[], args: string[]): { cmd: string; args: string[]; env: Record<string, string> } {
  return {
    cmd: runtime[0]!,
    args: [...runtime.slice(1), '-p', projectName(f), '-f', composeFile(), '--env-file', envFilePath(f), ...args],
    // The compose file names its seccomp profile by this directory (docker-compose reads it relative to the caller's cwd).
    env: { SVC_ENV_FILE: envFilePath(f), SVC_COMPOSE_DIR: path.dirname(composeFile()) },
  };
}
