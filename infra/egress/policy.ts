import { Resolver } from 'node:dns/promises';
import net from 'node:net';
import os from 'node:os';
import { egressAllows, isHostName, type EgressRule } from '../../domain/manifest/egress.js';
import { hostMatches, isLocalAddress, looseIPv4 } from '../git/url-policy.js';

/**
 * The egress proxy's decision for one connection: the server's outbound URL policy
 * (infra/git/url-policy.ts: its address rules, not a second copy) plus the project's
 * `[sandbox] egress` list. In order, cheapest and least revealing first:
 *   1. the target is a host name (every IP literal is refused, in any spelling);
 *   2. the manifest's list allows host:port (checked before resolving, so an unlisted
 *      name is never even looked up: no DNS lookups on the sandbox's behalf);
 *   3. the operator's blocked hosts (SVC_REPO_BLOCKED_HOSTS) do not name it;
 *   4. the name is resolved once; every address must be public (no loopback, private,
 *      link-local and so cloud metadata such as 169.254.169.254 or fd00:ec2::254,
 *      unique-local, CGNAT, multicast, unspecified or reserved) and none may be one of
 *      this host's own addresses. The connection then goes to the first checked address
 *      and nowhere else (pinned): a name that rebinds between check and connect is never
 *      resolved a second time.
 * `SVC_REPO_ALLOW_LOCAL_NETWORKS` and the repositories' allow list do not apply here:
 * they open a path for git remotes the server fetches, not for code a sandbox runs.
 */
export type EgressList = readonly EgressRule[] | null;

export type EgressRefusalRule = 'bad target' | 'ip literal' | 'not listed' | 'egress off' | 'blocked host' | 'does not resolve' | 'local network' | 'own address';

export type EgressDecision =
  | { ok: true; host: string; port: number; address: string }
  | { ok: false; host: string; port: number; rule: EgressRefusalRule; reason: string };

export interface EgressPolicy {
  check(host: string, port: number, list: EgressList): Promise<EgressDecision>;
}

export interface EgressPolicyOptions {
  /** Host name -> addresses. Default: DNS queries through c-ares (never the libuv thread pool a slow lookup would hold). */
  resolve?: (host: string) => Promise<string[]>;
  /** Host patterns the operator blocks for every outbound connection (`*.example.com`, `example.com`). */
  blockedHosts?: readonly string[];
  /** This host's addresses. Default: os.networkInterfaces(), re-read at most every 30 s. */
  ownAddresses?: () => ReadonlySet<string>;
  resolveTimeoutMs?: number;
}

function dnsResolve(timeoutMs: number): (host: string) => Promise<string[]> {
  const resolver = new Resolver({ timeout: timeoutMs, tries: 2 });
  return async (host) => {
    const [v4, v6] = await Promise.all([resolver.resolve4(host).catch(() => [] as string[]), resolver.resolve6(host).catch(() => [] as string[])]);
    return [...v4, ...v6];
  };
}

/** One spelling per address: lowercase IPv6 without a zone, and IPv4-mapped IPv6 as its IPv4. */
const canonical = (ip: string) => (net.isIPv6(ip) ? ip.toLowerCase().split('%')[0]!.replace(/^::ffff:(\d+\.\d+\.\d+\.\d+)$/, '$1') : ip);

function interfaceAddresses(): () => ReadonlySet<string> {
  let at = -Infinity;
  let cached: ReadonlySet<string> = new Set();
  return () => {
    if (performance.now() - at > 30_000) {
      cached = new Set(Object.values(os.networkInterfaces()).flatMap((list) => (list ?? []).map((i) => canonical(i.address))));
      at = performance.now();
    }
    return cached;
  };
}

export function egressPolicy(opts: EgressPolicyOptions = {}): EgressPolicy {
  const timeoutMs = opts.resolveTimeoutMs ?? 5000;
  const resolve = opts.resolve ?? dnsResolve(timeoutMs);
  const own = opts.ownAddresses ?? interfaceAddresses();
  const blocked = (opts.blockedHosts ?? []).map((p) => p.toLowerCase());

  return {
    async check(rawHost, port, list) {
      const host = rawHost.toLowerCase().replace(/^\[|\]$/g, '').replace(/\.$/, '');
      const no = (rule: EgressRefusalRule, reason: string): EgressDecision => ({ ok: false, host, port, rule, reason });
      if (net.isIP(host) || looseIPv4(host) !== null) {
        return no('ip literal', `${host} is an IP address: the egress proxy connects to host names only`);
      }
      if (!isHostName(host) || !Number.isInteger(port) || port < 1 || port > 65535) return no('bad target', `${rawHost}:${port} is not a host name and port`);
      if (list !== null && list.length === 0) return no('egress off', `this project's svc.toml sets [sandbox] egress = [] (no outbound connections)`);
      if (list !== null && !egressAllows(list, host, port)) {
        return no('not listed', `${host}:${port} is not in this project's [sandbox] egress list in svc.toml (an entry without a port allows 80 and 443)`);
      }
      if (blocked.some((p) => hostMatches(host, p))) return no('blocked host', `${host} is blocked on this server`);
      let addresses: string[];
      try {
        addresses = await withTimeout(resolve(host), timeoutMs);
      } catch {
        addresses = [];
      }
      if (addresses.length === 0) return no('does not resolve', `${host} does not resolve`);
      const local = addresses.find((a) => isLocalAddress(a));
      if (local !== undefined) return no('local network', `${host} resolves to ${local}, a loopback, private, link-local, metadata or otherwise non-public address`);
      const mine = own();
      const self = addresses.find((a) => mine.has(canonical(a)));
      if (self !== undefined) return no('own address', `${host} resolves to ${self}, an address of the server's own host`);
      return { ok: true, host, port, address: addresses[0]! };
    },
  };
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([p, new Promise<T>((_, reject) => (timer = setTimeout(() => reject(new Error('resolve timeout')), ms)))]).finally(() => clearTimeout(timer));
}
