/**
 * Hosts: named API endpoints. Four built-ins always exist; more can be added. Which host
 * a command talks to: `--host` > `SVC_API_URL` > `.svc/link.json`'s host > the active host.
 */
import type { ConfigData } from './config.js';
import { CliError, UsageError } from './errors.js';
import type { Env } from './factory.js';
import type { LinkFile } from './link.js';

export const BUILTIN_HOSTS: Readonly<Record<string, string>> = {
  cloud: 'https://api.svc.dev',
  selfhost: 'http://localhost:8080',
  'local-dev': 'http://localhost:3000',
  'svc-internal-dev': 'https://api.internal-dev.svc.dev',
};

export const DEFAULT_HOST = 'cloud';

export interface HostView {
  name: string;
  url: string;
  builtin: boolean;
  active: boolean;
  token?: string;
  user?: string;
}

/** `http://x:8080/v1/` -> `http://x:8080`. Throws a usage error for anything but http(s). */
export function normalizeUrl(input: string): string {
  let u: URL;
  try {
    u = new URL(input);
  } catch {
    throw new UsageError(`invalid URL: ${input}`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new UsageError(`invalid URL (want http or https): ${input}`);
  let p = u.pathname.replace(/\/+$/, '');
  if (p.endsWith('/v1')) p = p.slice(0, -3);
  return `${u.origin}${p}`;
}

export function activeHostName(c: ConfigData): string {
  return c.active_host && hostExists(c, c.active_host) ? c.active_host : DEFAULT_HOST;
}

export function hostExists(c: ConfigData, name: string): boolean {
  return name in BUILTIN_HOSTS || name in c.hosts;
}

export function listHosts(c: ConfigData): HostView[] {
  const active = activeHostName(c);
  const names = [...Object.keys(BUILTIN_HOSTS), ...Object.keys(c.hosts).filter((n) => !(n in BUILTIN_HOSTS)).sort()];
  return names.map((name) => hostView(c, name, active));
}

export function hostView(c: ConfigData, name: string, active = activeHostName(c)): HostView {
  const entry = c.hosts[name] ?? {};
  const builtin = name in BUILTIN_HOSTS;
  const url = entry.url ?? BUILTIN_HOSTS[name];
  if (url === undefined) throw new CliError(`unknown host "${name}"`, "see 'svc hosts ls'");
  const v: HostView = { name, url, builtin, active: name === active };
  if (entry.token) v.token = entry.token;
  if (entry.user) v.user = entry.user;
  return v;
}

/** What one invocation talks to, and why. */
export interface ResolvedHost {
  /** Host name; `SVC_API_URL` when the URL came from the environment. */
  name: string;
  url: string;
  token?: string;
  tokenSource?: 'SVC_CLI_TOKEN' | 'SVC_EXECUTOR_TOKEN' | 'config';
  source: 'flag' | 'env' | 'link' | 'active';
}

export function envToken(env: Env): { token: string; source: 'SVC_CLI_TOKEN' | 'SVC_EXECUTOR_TOKEN' } | undefined {
  if (env.SVC_CLI_TOKEN) return { token: env.SVC_CLI_TOKEN, source: 'SVC_CLI_TOKEN' };
  if (env.SVC_EXECUTOR_TOKEN) return { token: env.SVC_EXECUTOR_TOKEN, source: 'SVC_EXECUTOR_TOKEN' };
  return undefined;
}

export function resolveHost(c: ConfigData, env: Env, flagHost: string | undefined, link: LinkFile | undefined): ResolvedHost {
  let r: ResolvedHost;
  if (flagHost) {
    if (!hostExists(c, flagHost)) throw new CliError(`unknown host "${flagHost}"`, "see 'svc hosts ls' or add it with 'svc hosts add'");
    r = fromConfig(c, flagHost, 'flag');
  } else if (env.SVC_API_URL) {
    r = { name: 'SVC_API_URL', url: normalizeUrl(env.SVC_API_URL), source: 'env' };
  } else if (link?.host && hostExists(c, link.host)) {
    r = fromConfig(c, link.host, 'link');
  } else if (link?.host_url) {
    // Linked under a host this config does not know (another machine, or a link file that
    // came with a cloned repository). Never send a token to a URL only a file vouches for.
    const name = link.host ?? 'linked';
    throw new CliError(
      `unknown host "${name}" in .svc/link.json (${link.host_url})`,
      `if you trust it: svc hosts add ${name} --url ${link.host_url}`,
    );
  } else {
    r = fromConfig(c, activeHostName(c), 'active');
  }
  // Like GH_TOKEN: a token in the environment beats the stored one.
  const et = envToken(env);
  if (et) {
    r.token = et.token;
    r.tokenSource = et.source;
  }
  return r;
}

function fromConfig(c: ConfigData, name: string, source: ResolvedHost['source']): ResolvedHost {
  const v = hostView(c, name);
  const r: ResolvedHost = { name, url: v.url, source };
  if (v.token) {
    r.token = v.token;
    r.tokenSource = 'config';
  }
  return r;
}

export function maskToken(token: string): string {
  const prefix = token.startsWith('svc_pat_') ? 'svc_pat_' : '';
  const tail = token.length - prefix.length > 8 ? token.slice(-4) : '';
  return `${prefix}${'*'.repeat(8)}${tail}`;
}
