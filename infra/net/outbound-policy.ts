import dns from 'node:dns/promises';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import { DomainError } from '../../domain/errors.js';
import type { Config } from '../config.js';
import { hostMatches, isLocalAddress, looseIPv4, repoUrlPolicy, type RepoUrlPolicy } from '../git/url-policy.js';

/**
 * The one outbound URL policy, for every http(s) URL a user supplies that the server then
 * connects to (chat webhooks today). Its rules and settings are the repositories' (the
 * address rules live in infra/git/url-policy.ts; `SVC_REPO_ALLOW_LOCAL_NETWORKS`,
 * `SVC_REPO_BLOCKED_HOSTS`, `SVC_REPO_ALLOWED_HOSTS`): no loopback, private, link-local
 * (cloud metadata included), multicast or unspecified address, in any spelling of an IP
 * literal or behind any name; a blocked host is refused; a host on the allow list may be
 * local. (The allow list does not narrow webhooks to it: it names repository hosts.)
 *
 * Checked when the URL is stored and again at every connection, which then goes to an
 * address that was checked (the name is resolved once and the connection pinned to it),
 * so a name that resolves to 127.0.0.1 later (DNS rebinding) is refused at delivery.
 */
export type OutboundPolicy = RepoUrlPolicy;

export const outboundPolicy = (config: Config, resolve?: (host: string) => Promise<string[]>): OutboundPolicy => repoUrlPolicy(config, resolve);

export interface CheckedHttpTarget {
  url: URL;
  /** The addresses checked; the connection goes to the first. Empty only when a stored URL's name did not resolve yet. */
  addresses: string[];
}

const refused = (field: string, rule: string, message: string) =>
  new DomainError('validation', 'URL not allowed', message, { rule, issues: [{ path: field, message: rule }] });

const systemResolve = async (host: string) => (await dns.lookup(host, { all: true, verbatim: true })).map((a) => a.address);

/**
 * The whole check. `allowHttp`: plain http:// too (else https only). `mustResolve`: a name
 * that does not resolve is refused (at connection time); when storing a URL it is accepted
 * and checked again at every connection.
 */
export async function checkHttpUrl(
  raw: string,
  policy: OutboundPolicy,
  o: { field: string; allowHttp: boolean; mustResolve: boolean; httpHint?: string },
): Promise<CheckedHttpTarget> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new DomainError('validation', 'Validation failed', `${o.field} is not a URL.`, { issues: [{ path: o.field, message: 'invalid URL' }] });
  }
  if (!(url.protocol === 'https:' || (o.allowHttp && url.protocol === 'http:'))) {
    throw new DomainError('validation', 'Validation failed', o.allowHttp ? `${o.field} must be an http(s) URL.` : `${o.field} must be an https URL${o.httpHint ?? ''}.`, {
      issues: [{ path: o.field, message: 'scheme not allowed' }],
    });
  }
  if (url.username || url.password) {
    throw new DomainError('validation', 'Validation failed', `${o.field} must not carry credentials.`, { issues: [{ path: o.field, message: 'credentials in URL' }] });
  }
  const host = url.hostname.replace(/^\[|\]$/g, '').toLowerCase();
  if (policy.blockedHosts.some((p) => hostMatches(host, p))) throw refused(o.field, 'blocked host', `The host ${host} is blocked on this server.`);
  const listed = policy.allowedHosts.some((p) => hostMatches(host, p));
  const literal = net.isIP(host) ? host : looseIPv4(host);
  let addresses: string[];
  if (literal) addresses = [literal];
  else {
    try {
      addresses = await (policy.resolve ?? systemResolve)(host);
    } catch {
      addresses = [];
    }
    if (addresses.length === 0) {
      if (o.mustResolve) throw refused(o.field, 'host does not resolve', `The host ${host} does not resolve.`);
      return { url, addresses };
    }
  }
  if (!listed && !policy.allowLocalNetworks) {
    const local = addresses.find(isLocalAddress);
    if (local !== undefined) {
      throw refused(
        o.field,
        'local network',
        `The host ${host} resolves to ${local}, a loopback, private, link-local, multicast or unspecified address (an operator can allow these with SVC_REPO_ALLOW_LOCAL_NETWORKS=1).`,
      );
    }
  }
  return { url, addresses };
}

/**
 * POSTs `body` to a URL checked just now (`checkHttpUrl` with `mustResolve`), connecting
 * to the checked address only (TLS still verifies the name). Redirects are not followed.
 */
export function postPinned(
  target: CheckedHttpTarget,
  body: string,
  headers: Record<string, string>,
  timeoutMs: number,
): Promise<{ status: number }> {
  const address = target.addresses[0];
  if (address === undefined) return Promise.reject(new Error('no checked address to connect to'));
  const family = net.isIPv6(address) ? 6 : 4;
  const lookup = (_host: string, opts: { all?: boolean }, cb: (...args: unknown[]) => void) =>
    opts?.all ? cb(null, [{ address, family }]) : cb(null, address, family);
  const mod = target.url.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    const req = mod.request(
      target.url,
      { method: 'POST', headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) }, lookup: lookup as never, timeout: timeoutMs, agent: false },
      (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode ?? 0 }));
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(Object.assign(new Error(`no answer in ${timeoutMs} ms`), { name: 'TimeoutError' })));
    req.on('error', reject);
    req.end(body);
  });
}
