import type { Config } from '../../infra/config.js';

/**
 * Where previews live (contracts.md, "Previews"): `p<port>-<session id>.<SVC_PREVIEW_DOMAIN>`,
 * or locally `p<port>-<session id>.localhost:<port of this server>` (browsers resolve
 * `*.localhost` to loopback and treat each name as a site of its own). A preview is thus
 * another origin than the dashboard: its scripts cannot read the dashboard's pages or
 * cookies, and the dashboard's cookie is never sent to it.
 */
type PreviewConfig = Pick<Config, 'SVC_PREVIEW_DOMAIN' | 'SVC_PUBLIC_URL'>;

/** A preview's DNS label; an app whose plain label would read as one gets a hashed label instead. */
export const PREVIEW_LABEL = /^p([1-9][0-9]{0,4})-([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/;

/** The preview domain: configured, or `localhost` on a loopback install. */
export const previewDomainOf = (config: PreviewConfig): string => (config.SVC_PREVIEW_DOMAIN ?? 'localhost').toLowerCase().replace(/:\d+$/, '');

const hostnameOf = (host: string | undefined): string => {
  const h = (host ?? '').trim().toLowerCase();
  return h.startsWith('[') ? h : h.replace(/:\d*$/, '').replace(/\.$/, '');
};

export type PreviewHost = { port: number; sessionId: string } | 'unknown';

/**
 * A Host header under the preview domain: the preview it names, or `unknown` (a name
 * under the domain that is no preview: answered 404 there, never by the API). Any other
 * host: null (the dashboard and the API).
 */
export function parsePreviewHost(host: string | undefined, config: PreviewConfig): PreviewHost | null {
  const name = hostnameOf(host);
  const domain = previewDomainOf(config);
  if (!name.endsWith(`.${domain}`)) return null;
  const m = PREVIEW_LABEL.exec(name.slice(0, -(domain.length + 1)));
  if (!m) return 'unknown';
  const port = Number(m[1]);
  return port <= 65535 ? { port, sessionId: m[2]! } : 'unknown';
}

export const isLoopbackHost = (h: string) => h === 'localhost' || h.endsWith('.localhost') || /^127\.\d+\.\d+\.\d+$/.test(h) || h === '[::1]';

/**
 * The preview's origin, as a browser reaches it. `listenPort` is the port this server
 * answered the current request on: locally the previews share it.
 */
export function previewOrigin(config: PreviewConfig, sessionId: string, port: number, listenPort: number): string {
  const label = `p${port}-${sessionId.toLowerCase()}`;
  const pub = config.SVC_PUBLIC_URL ? new URL(config.SVC_PUBLIC_URL) : null;
  if (config.SVC_PREVIEW_DOMAIN) {
    const scheme = pub ? pub.protocol : 'http:';
    return `${scheme}//${label}.${config.SVC_PREVIEW_DOMAIN.toLowerCase()}`;
  }
  const p = pub && isLoopbackHost(pub.hostname) && pub.port ? pub.port : String(listenPort);
  return `http://${label}.localhost:${p}`;
}

/** The dashboard's origin as the preview origin sends browsers back to it. */
export const dashboardOrigin = (config: PreviewConfig, listenPort: number): string =>
  config.SVC_PUBLIC_URL ? new URL(config.SVC_PUBLIC_URL).origin : `http://127.0.0.1:${listenPort}`;

/** The dashboard's CSP `frame-src`: every preview origin, nothing else. */
export function previewFrameSource(config: PreviewConfig): string {
  if (!config.SVC_PREVIEW_DOMAIN) return 'http://*.localhost:*';
  const scheme = config.SVC_PUBLIC_URL ? new URL(config.SVC_PUBLIC_URL).protocol : 'http:';
  return `${scheme}//*.${config.SVC_PREVIEW_DOMAIN.toLowerCase()}`;
}
