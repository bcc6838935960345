import type { IncomingMessage } from 'node:http';
import net from 'node:net';
import { parseCidrList } from '../lib/cidr.js';

/**
 * Who a request comes from, for the limits that are kept per principal (failed
 * authentications, password sign-in back-off). One place decides it:
 *
 * - the client address: the TCP peer, or, when the peer is a reverse proxy the operator
 *   trusts (`SVC_TRUST_PROXY`, a list of CIDRs), the right-most `X-Forwarded-For` hop
 *   that is not itself a trusted proxy. An untrusted peer's `X-Forwarded-For` is ignored,
 *   so a client cannot spread its guesses over addresses it makes up.
 * - IPv6 clients are keyed by their /64: one host holds a whole /64.
 *
 * A request that reached the server through a sandbox's own gateway socket is keyed by
 * that sandbox (`sandbox:<id>`) once the gateway attaches its identity in-process; until
 * then every request is keyed by address (`addr:<ip>`).
 */
export interface TrustedProxies {
  /** Empty: no proxy is trusted, `X-Forwarded-For` is never read. */
  readonly list: net.BlockList | null;
}

/** Parsed once from `SVC_TRUST_PROXY` (validated by the config already). */
export function parseTrustedProxies(spec: string): TrustedProxies {
  return { list: parseCidrList(spec) };
}

/** `::ffff:1.2.3.4` -> `1.2.3.4`; brackets and a port on a forwarded hop dropped; null when not an address. */
function normalize(raw: string | undefined): string | null {
  if (!raw) return null;
  let s = raw.trim();
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(s);
  if (bracketed) s = bracketed[1]!;
  else if (/^\d+\.\d+\.\d+\.\d+:\d+$/.test(s)) s = s.slice(0, s.lastIndexOf(':'));
  s = s.replace(/^::ffff:(\d+\.\d+\.\d+\.\d+)$/i, '$1');
  return net.isIP(s) ? s.toLowerCase() : null;
}

const trusted = (trust: TrustedProxies, ip: string) => trust.list !== null && trust.list.check(ip, net.isIPv4(ip) ? 'ipv4' : 'ipv6');

/** The client's address as described above ('unknown' when the socket has none). */
export function clientAddress(req: IncomingMessage, trust: TrustedProxies): string {
  let addr = normalize(req.socket.remoteAddress);
  if (addr === null) return 'unknown';
  if (!trusted(trust, addr)) return addr;
  const header = req.headers['x-forwarded-for'];
  const hops = (Array.isArray(header) ? header.join(',') : (header ?? '')).split(',');
  // Right to left: each hop was written by the one after it; the first untrusted hop is the client.
  for (let i = hops.length - 1; i >= 0; i--) {
    const hop = normalize(hops[i]);
    if (hop === null) break; // a malformed hop: keep the last address a trusted proxy vouched for
    addr = hop;
    if (!trusted(trust, hop)) break;
  }
  return addr;
}

/** The /64 of an IPv6 address (hosts get whole /64s), an IPv4 address as it is. */
function bucketOf(ip: string): string {
  if (!net.isIPv6(ip)) return ip;
  const groups = expand(ip.split('%')[0]!);
  return `${groups.slice(0, 4).join(':')}::/64`;
}

function expand(ip: string): string[] {
  const [head, tail] = ip.includes('::') ? ip.split('::') : [ip, undefined];
  const h = head ? head.split(':') : [];
  const t = tail ? tail.split(':') : [];
  const fill = tail !== undefined ? 8 - h.length - t.length : 0;
  return [...h, ...Array<string>(fill).fill('0'), ...t].map((g) => (parseInt(g || '0', 16) || 0).toString(16));
}

/** The principal key of a request: the one function every per-principal limit keys by. */
export function clientKeyOf(req: IncomingMessage, trust: TrustedProxies): string {
  // The sandbox gateway (issue 20 item 2, api/gateway.ts) extends this here, first:
  //   const gw = gatewayOf(req); if (gw) return `sandbox:${gw.sandboxId}`;
  const addr = clientAddress(req, trust);
  return addr === 'unknown' ? 'addr:unknown' : `addr:${bucketOf(addr)}`;
}
