import dns from 'node:dns/promises';
import { realpathSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { DomainError } from '../../domain/errors.js';
import type { Config } from '../config.js';
import { assertRemoteUrl } from './remote-url.js';

/**
 * Where a project's repository may live (Gitea's ALLOW_LOCALNETWORKS / ALLOWED_DOMAINS /
 * BLOCKED_DOMAINS are the anchor). Checked when a project is created and again before
 * every git network call (a name that resolved to a public address at creation may
 * resolve to 127.0.0.1 later: DNS rebinding). A refusal is a 400 naming the rule.
 *
 * Order: a blocked host is refused; with an allow list, a host not on it is refused; a
 * host on the allow list skips the local-network rule (as in Gitea); otherwise every
 * address the host resolves to must be public unless `allowLocalNetworks`.
 */
export interface RepoUrlPolicy {
  allowLocalNetworks: boolean;
  allowFile: boolean;
  allowHttpCredentials: boolean;
  allowedHosts: string[];
  blockedHosts: string[];
  /** The server's data directory: a file:// repository never points inside it. */
  dataDir: string;
  /** Other server-owned directories a file:// repository never points inside (managed repos' root). */
  privateDirs?: string[];
  /** Host name -> addresses. Default: the system resolver. Stubbed in tests. */
  resolve?: (host: string) => Promise<string[]>;
}

export interface CheckedTarget {
  protocol: string;
  /** Lowercased host ('' for file://). */
  host: string;
  port: number | null;
  /** The addresses that were checked (empty for file:// and IP literals' own value). */
  addresses: string[];
}

const list = (v: string) =>
  v
    .split(',')
    .map((s) => s.trim().toLowerCase())
    .filter(Boolean);

export function repoUrlPolicy(config: Config, resolve?: (host: string) => Promise<string[]>): RepoUrlPolicy {
  return {
    allowLocalNetworks: config.SVC_REPO_ALLOW_LOCAL_NETWORKS,
    allowFile: config.SVC_ALLOW_FILE_REPOS,
    allowHttpCredentials: config.SVC_REPO_ALLOW_HTTP_CREDENTIALS,
    allowedHosts: list(config.SVC_REPO_ALLOWED_HOSTS),
    blockedHosts: list(config.SVC_REPO_BLOCKED_HOSTS),
    dataDir: config.dataDir,
    privateDirs: config.SVC_REPOS_DIR ? [path.resolve(config.SVC_REPOS_DIR)] : [],
    ...(resolve ? { resolve } : {}),
  };
}

export const refused = (rule: string, message: string) =>
  new DomainError('validation', 'Repository URL not allowed', message, { rule, issues: [{ path: 'repo_url', message: rule }] });

const systemResolve = async (host: string) => (await dns.lookup(host, { all: true, verbatim: true })).map((a) => a.address);

/** `*.example.com` matches subdomains, `example.com` itself only, `*` everything. */
export function hostMatches(host: string, pattern: string): boolean {
  if (pattern === '*') return true;
  if (pattern.startsWith('*.')) return host.endsWith(pattern.slice(1));
  return host === pattern;
}

/**
 * The IPv4 forms `inet_aton` (and so git's resolver) accepts: 1 to 4 parts, each decimal,
 * hex (0x) or octal (leading 0), the last filling the remaining bytes. `2130706433`,
 * `0x7f000001`, `0177.1` and `127.1` are all 127.0.0.1.
 */
export function looseIPv4(host: string): string | null {
  const parts = host.split('.');
  if (parts.length < 1 || parts.length > 4) return null;
  const nums: number[] = [];
  for (const p of parts) {
    let n: number;
    if (/^0x[0-9a-f]*$/i.test(p)) n = p.length === 2 ? 0 : parseInt(p.slice(2), 16);
    else if (/^0[0-7]+$/.test(p)) n = parseInt(p, 8);
    else if (/^(0|[1-9][0-9]*)$/.test(p)) n = Number(p);
    else return null;
    if (!Number.isFinite(n)) return null;
    nums.push(n);
  }
  const last = nums.pop()!;
  if (nums.some((n) => n > 255)) return null;
  const restBytes = 4 - nums.length;
  if (last >= 2 ** (8 * restBytes)) return null;
  const bytes = [...nums];
  for (let i = restBytes - 1; i >= 0; i--) bytes.push(Math.floor(last / 2 ** (8 * i)) % 256);
  return bytes.join('.');
}

const V4_LOCAL = new net.BlockList();
for (const [a, p] of [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12],
  ['192.0.0.0', 24], ['192.0.2.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15], ['198.51.100.0', 24], ['203.0.113.0', 24],
  ['224.0.0.0', 4], ['240.0.0.0', 4],
] as const) V4_LOCAL.addSubnet(a, p, 'ipv4');
const V6_LOCAL = new net.BlockList();
for (const [a, p] of [
  ['::', 128], ['::1', 128], ['fc00::', 7], ['fe80::', 10], ['fec0::', 10], ['ff00::', 8], ['100::', 64], ['2001:db8::', 32],
  // Teredo: a tunnel whose far end (and the IPv4 it wraps, obfuscated) no rule here can judge.
  ['2001::', 32],
  // NAT64 for local use (RFC 8215): translated to IPv4 at any prefix length, so no fixed place to read it.
  ['64:ff9b:1::', 48],
] as const) V6_LOCAL.addSubnet(a, p, 'ipv6');

/** The 8 16-bit groups of an IPv6 address (with an embedded dotted IPv4 tail). */
function v6Groups(ip: string): number[] {
  let s = ip.toLowerCase().split('%')[0]!;
  const tail = /(\d+\.\d+\.\d+\.\d+)$/.exec(s);
  if (tail) {
    const b = tail[1]!.split('.').map(Number);
    s = s.slice(0, -tail[1]!.length) + `${((b[0]! << 8) | b[1]!).toString(16)}:${((b[2]! << 8) | b[3]!).toString(16)}`;
  }
  const [head, rest] = s.includes('::') ? s.split('::') : [s, undefined];
  const h = head ? head.split(':') : [];
  const r = rest !== undefined && rest !== '' ? rest.split(':') : [];
  const fill = rest !== undefined ? 8 - h.length - r.length : 0;
  return [...h, ...Array(fill).fill('0'), ...r].map((g) => parseInt(g || '0', 16));
}

/** Loopback, private, link-local, multicast, unspecified, reserved or documentation ranges; tunnels (Teredo) whose target cannot be judged. */
export function isLocalAddress(ip: string): boolean {
  if (net.isIPv4(ip)) return V4_LOCAL.check(ip, 'ipv4');
  if (!net.isIPv6(ip)) return true; // not an address: never trusted
  if (V6_LOCAL.check(ip, 'ipv6')) return true;
  const g = v6Groups(ip);
  const v4 = (hi: number, lo: number) => `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
  // IPv4-mapped (::ffff:a.b.c.d), IPv4-compatible (::a.b.c.d), NAT64 (64:ff9b::/96): the embedded IPv4 decides.
  if (g.slice(0, 5).every((x) => x === 0) && (g[5] === 0xffff || g[5] === 0)) return isLocalAddress(v4(g[6]!, g[7]!));
  // SIIT's IPv4-translated addresses (::ffff:0:a.b.c.d, ::ffff:0:0:0/96): the embedded IPv4 decides too.
  if (g.slice(0, 4).every((x) => x === 0) && g[4] === 0xffff && g[5] === 0) return isLocalAddress(v4(g[6]!, g[7]!));
  if (g[0] === 0x64 && g[1] === 0xff9b && g.slice(2, 6).every((x) => x === 0)) return isLocalAddress(v4(g[6]!, g[7]!));
  // 6to4 (2002:aabb:ccdd::/16) embeds an IPv4 in groups 1-2.
  if (g[0] === 0x2002) return isLocalAddress(v4(g[1]!, g[2]!));
  return false;
}

interface ParsedTarget {
  protocol: string;
  host: string;
  port: number | null;
  filePath?: string;
}

const DEFAULT_PORTS: Record<string, number> = { 'http:': 80, 'https:': 443, 'ssh:': 22, 'git:': 9418 };

/** Syntax only (no I/O): transport, host, path segments, no query or fragment. */
export function parseRepoTarget(url: string): ParsedTarget {
  assertRemoteUrl(url);
  if (/[?#]/.test(url)) throw refused('no query string or fragment', 'repo_url must not carry a query string or a fragment.');
  const scp = /^([A-Za-z0-9._-]+)@([^:/]+):(.*)$/.exec(url);
  let protocol: string;
  let host: string;
  let port: number | null;
  let pathname: string;
  if (scp && !/^[a-z][a-z0-9+.-]*:\/\//i.test(url)) {
    protocol = 'ssh:';
    host = scp[2]!.toLowerCase();
    port = 22;
    pathname = scp[3]!;
  } else {
    const u = new URL(url);
    protocol = u.protocol;
    host = u.hostname.toLowerCase();
    port = u.port ? Number(u.port) : (DEFAULT_PORTS[protocol] ?? null);
    pathname = u.pathname;
    if (protocol === 'file:') {
      if (host !== '' && host !== 'localhost') throw refused('file URL host', 'A file:// repo_url names no host.');
    } else if (host === '') throw refused('host required', 'repo_url must name a host.');
  }
  if (host.startsWith('-') || host.startsWith('[-')) throw refused("no host starting with '-'", "The repository host must not start with '-'.");
  let segments: string[];
  try {
    segments = pathname.split('/').map((s) => decodeURIComponent(s));
  } catch {
    throw refused('path encoding', 'repo_url has an invalid percent-encoding.');
  }
  if (segments.some((s) => s.startsWith('-'))) throw refused("no path segment starting with '-'", "No segment of the repository path may start with '-'.");
  if (protocol === 'file:') {
    let filePath: string;
    try {
      filePath = fileURLToPath(url);
    } catch {
      throw refused('invalid file URL', 'repo_url is not a valid file:// URL.');
    }
    return { protocol, host: '', port: null, filePath };
  }
  return { protocol, host, port };
}

/**
 * realpath of the longest existing prefix, plus the rest: links resolved even for a path not
 * created yet. Resolved afresh on every check (nothing cached: a link may be re-pointed), with
 * the synchronous libc realpath: a few lstat calls of a local path cost ~5 µs of CPU, while a
 * thread-pool round trip per call (fs/promises) cost ~55 µs each, and the open-CR read
 * resolves three paths per request (the repository, the data dir, the managed repos' root).
 */
function realish(p: string): string {
  const abs = path.resolve(p);
  const rest: string[] = [];
  let cur = abs;
  for (;;) {
    try {
      const real = realpathSync.native(cur);
      return rest.length === 0 ? real : path.join(real, ...rest.reverse());
    } catch {
      const parent = path.dirname(cur);
      if (parent === cur) return abs;
      rest.push(path.basename(cur));
      cur = parent;
    }
  }
}

const inside = (p: string, dir: string) => p === dir || p.startsWith(dir.endsWith(path.sep) ? dir : dir + path.sep);

/**
 * The whole policy: syntax, then file rules (realpath, never /proc, never inside the data
 * dir) or network rules (lists, then addresses). `hasCredentials`: credentials are
 * refused on plain http:// unless the operator allows it.
 */
export async function checkRepoUrl(url: string, policy: RepoUrlPolicy, opts: { hasCredentials?: boolean } = {}): Promise<CheckedTarget> {
  return checkTarget(parseRepoTarget(url), policy, opts);
}

/**
 * `checkRepoUrl` for a URL that is checked again and again (an open repository's, before
 * every read): the syntax is parsed once, here (it never changes for the same string; a
 * refusal is thrown again by every check), everything the file system or DNS answers is
 * asked afresh on every call.
 */
export function repoUrlCheck(url: string, policy: RepoUrlPolicy, opts: { hasCredentials?: boolean } = {}): () => Promise<CheckedTarget> {
  let parsed: Readonly<ParsedTarget> | undefined;
  let refusal: unknown;
  try {
    parsed = Object.freeze(parseRepoTarget(url));
  } catch (err) {
    refusal = err;
  }
  return async () => {
    if (!parsed) throw refusal;
    return checkTarget(parsed, policy, opts);
  };
}

async function checkTarget(t: Readonly<ParsedTarget>, policy: RepoUrlPolicy, opts: { hasCredentials?: boolean }): Promise<CheckedTarget> {
  if (t.protocol === 'file:') {
    if (!policy.allowFile) {
      throw refused('file repositories disabled', 'file:// repositories are disabled on this server (an operator can allow them with SVC_ALLOW_FILE_REPOS=1).');
    }
    const raw = path.resolve(t.filePath!);
    const real = realish(raw);
    if (inside(raw, '/proc') || inside(real, '/proc')) throw refused('no /proc paths', 'repo_url must not point into /proc.');
    const dataDir = realish(policy.dataDir);
    if (inside(real, dataDir) || inside(raw, path.resolve(policy.dataDir))) {
      throw refused('inside the data dir', "repo_url must not point inside the server's data directory.");
    }
    for (const dir of policy.privateDirs ?? []) {
      if (inside(real, realish(dir)) || inside(raw, dir)) {
        throw refused('inside the managed repositories', "repo_url must not point inside the server's managed repositories.");
      }
    }
    return { protocol: t.protocol, host: '', port: null, addresses: [] };
  }
  if (opts.hasCredentials && t.protocol === 'http:' && !policy.allowHttpCredentials) {
    throw refused('credentials need https', 'Credentials are only sent over https:// (an operator can allow http:// with SVC_REPO_ALLOW_HTTP_CREDENTIALS=1).');
  }
  const bare = t.host.replace(/^\[|\]$/g, '');
  if (policy.blockedHosts.some((p) => hostMatches(bare, p))) throw refused('blocked host', `The host ${bare} is blocked on this server.`);
  const listed = policy.allowedHosts.some((p) => hostMatches(bare, p));
  if (policy.allowedHosts.length > 0 && !listed) throw refused('host not allowed', `The host ${bare} is not on this server's allow list.`);
  const literal = net.isIP(bare) ? bare : looseIPv4(bare);
  let addresses: string[];
  if (literal) addresses = [literal];
  else {
    try {
      addresses = await (policy.resolve ?? systemResolve)(bare);
    } catch {
      throw refused('host does not resolve', `The host ${bare} does not resolve.`);
    }
    if (addresses.length === 0) throw refused('host does not resolve', `The host ${bare} does not resolve.`);
  }
  if (!listed && !policy.allowLocalNetworks) {
    const local = addresses.find(isLocalAddress);
    if (local !== undefined) {
      throw refused(
        'local network',
        `The host ${bare} resolves to ${local}, a loopback, private, link-local, multicast or unspecified address (an operator can allow these with SVC_REPO_ALLOW_LOCAL_NETWORKS=1).`,
      );
    }
  }
  return { protocol: t.protocol, host: bare, port: t.port, addresses };
}
