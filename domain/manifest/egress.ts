import { z } from 'zod';

/**
 * `[sandbox] egress` of svc.toml: where a sandbox's outbound connections may go, through
 * the egress proxy (infra/egress/proxy.ts). Each entry names a host exactly
 * (`api.anthropic.com`) or every host under a suffix (`*.npmjs.org`: `registry.npmjs.org`,
 * not `npmjs.org` itself), optionally with a port (`host:8443`); without one, ports 80 and
 * 443. Key absent: the public internet (any host name, any port). `[]`: nothing.
 *
 * Entries name hosts, never addresses: the proxy refuses every IP literal, so an entry
 * that is one could never match and is a manifest error instead.
 */
export interface EgressRule {
  /** Lowercased host, or the suffix (with its leading dot) for a `*.` entry. */
  host: string;
  wildcard: boolean;
  /** null: 80 and 443. */
  port: number | null;
}

export const DEFAULT_EGRESS_PORTS: readonly number[] = [80, 443];

const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;

/** A DNS host name: dot-separated labels, at most 253 characters, not all-numeric at the end (an IPv4 spelling). */
export function isHostName(host: string): boolean {
  if (host.length === 0 || host.length > 253) return false;
  const labels = host.split('.');
  if (!labels.every((l) => LABEL.test(l))) return false;
  return !/^[0-9]+$/.test(labels[labels.length - 1]!) && !/^0x[0-9a-f]*$/.test(labels[labels.length - 1]!);
}

/** One entry, or the reason it is not one. */
export function parseEgressEntry(raw: string): EgressRule | { error: string } {
  const s = raw.trim().toLowerCase();
  const m = /^(\*\.)?([^:]+)(?::(\d{1,5}))?$/.exec(s);
  if (!m) return { error: 'an entry is "host", "*.suffix" or either with ":port"' };
  const [, star, host, portText] = m;
  if (!isHostName(host!)) return { error: `'${host}' is not a host name (IP addresses are never allowed; use a name)` };
  let port: number | null = null;
  if (portText !== undefined) {
    port = Number(portText);
    if (!/^[1-9]/.test(portText) || port < 1 || port > 65535) return { error: `port '${portText}' is not 1-65535` };
  }
  return star ? { host: `.${host}`, wildcard: true, port } : { host: host!, wildcard: false, port };
}

/** The manifest's value: a list of entries (lowercased), validated one by one. */
export const EgressList = z
  .array(
    z.string().max(300).transform((s, ctx) => {
      const r = parseEgressEntry(s);
      if ('error' in r) {
        ctx.addIssue({ code: 'custom', message: r.error });
        return z.NEVER;
      }
      return s.trim().toLowerCase();
    }),
  )
  .max(500);

export const egressRules = (entries: readonly string[]): EgressRule[] =>
  entries.map(parseEgressEntry).filter((r): r is EgressRule => !('error' in r));

/** Whether a list allows `host:port` (host lowercased, no trailing dot). */
export function egressAllows(rules: readonly EgressRule[], host: string, port: number): boolean {
  return rules.some((r) => (r.wildcard ? host.endsWith(r.host) && host.length > r.host.length : host === r.host) && (r.port === null ? DEFAULT_EGRESS_PORTS.includes(port) : r.port === port));
}
