/** Resolving, for one invocation, which host, token and project a command acts on. */
import { ApiClient } from './api-client.js';
import { readConfig, type ConfigData } from './config.js';
import { CliError, UsageError } from './errors.js';
import type { Factory } from './factory.js';
import { resolveHost, type ResolvedHost } from './hosts.js';
import { findLink, type LinkFile } from './link.js';

export interface HostFlags {
  host?: string;
  json?: boolean;
}

export interface HostContext {
  config: ConfigData;
  host: ResolvedHost;
  link?: { file: string; link: LinkFile };
  api: ApiClient;
}

export function apiFor(f: Factory, url: string, token: string | undefined, refusedHint?: string): ApiClient {
  return new ApiClient({ baseUrl: url, fetch: f.fetch, userAgent: `svc-cli/${f.version}`, ...(token ? { token } : {}), ...(refusedHint ? { refusedHint } : {}) });
}

/**
 * What to do when the server refuses this token, by where it came from: a variable in the
 * environment overrides any login (logging in again would change nothing), a stored one is
 * replaced by logging in again.
 */
export function refusedTokenHint(f: Factory, host: ResolvedHost): string | undefined {
  switch (host.tokenSource) {
    case 'SVC_CLI_TOKEN':
    case 'SVC_EXECUTOR_TOKEN':
      return `the token comes from ${host.tokenSource}, which overrides any 'svc login': set it to a valid token (svc auth token create), or unset it to use the stored login`;
    case 'config':
      return `the token stored for host "${host.name}" in ${f.configPath} was refused: run 'svc login${host.source === 'active' ? '' : ` --host ${host.name}`}'`;
    default:
      return undefined;
  }
}

/** Resolves the host; prints it on stderr first, as the spec asks of operational commands. */
export async function hostContext(f: Factory, flags: HostFlags, announce = true): Promise<HostContext> {
  const [config, link] = await Promise.all([readConfig(f.configPath), findLink(f.cwd)]);
  const host = resolveHost(config, f.env, flags.host, link?.link);
  if (announce && !flags.json) f.io.err.write(`host: ${host.name} (${host.url})\n`);
  if (!host.token) {
    const login = host.source === 'env' ? 'set SVC_CLI_TOKEN' : `run 'svc login${host.source === 'active' ? '' : ` --host ${host.name}`}' or set SVC_CLI_TOKEN`;
    throw new CliError(`not logged in to ${host.name}`, login);
  }
  const ctx: HostContext = { config, host, api: apiFor(f, host.url, host.token, refusedTokenHint(f, host)) };
  if (link) ctx.link = link;
  return ctx;
}

export interface ProjectFlags extends HostFlags {
  project?: string;
}

export interface ProjectContext extends HostContext {
  projectId: string;
  projectSource: 'flag' | 'SVC_PROJECT_ID' | 'link';
}

/** `--project` > `SVC_PROJECT_ID` > `.svc/link.json` in cwd or an ancestor. */
export async function projectContext(f: Factory, flags: ProjectFlags): Promise<ProjectContext> {
  const ctx = await hostContext(f, flags);
  if (flags.project) return { ...ctx, projectId: flags.project, projectSource: 'flag' };
  if (f.env.SVC_PROJECT_ID) return { ...ctx, projectId: f.env.SVC_PROJECT_ID, projectSource: 'SVC_PROJECT_ID' };
  if (ctx.link) return { ...ctx, projectId: ctx.link.link.project_id, projectSource: 'link' };
  throw new CliError('no project: this directory is not linked', "run 'svc projects link', pass --project, or set SVC_PROJECT_ID");
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** `3`, `#3` or a uuid, as the API's `:crId` takes it. */
export function parseCrRef(ref: string | number): string {
  const s = String(ref).trim();
  const m = /^#?(\d+)$/.exec(s);
  if (m && Number(m[1]) > 0) return String(Number(m[1]));
  if (UUID.test(s)) return s.toLowerCase();
  throw new UsageError(`invalid change request "${s}": want a number (3, #3) or a cr_id uuid`);
}

/** Where a person looks at things: `SVC_DASHBOARD_URL`, else derived from the API URL. */
export function dashboardUrl(f: Factory, apiUrl: string): string {
  if (f.env.SVC_DASHBOARD_URL) return f.env.SVC_DASHBOARD_URL.replace(/\/+$/, '');
  const u = new URL(apiUrl);
  if (u.hostname.startsWith('api.')) u.hostname = u.hostname.slice(4);
  const p = u.pathname.replace(/\/+$/, '').replace(/\/v1$/, '');
  return `${u.origin}${p}`;
}
