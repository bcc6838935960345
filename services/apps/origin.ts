import { createHash } from 'node:crypto';
import type { Config } from '../../infra/config.js';
import { APP_LABEL_NAME_MAX } from '../../domain/manifest/schema.js';
import { isLoopbackHost, PREVIEW_LABEL } from '../previews/origin.js';

/**
 * Where apps live (docs/manifest.md "Apps"): `<app>-<first 12 hex of the project id>.<SVC_APPS_DOMAIN>`
 * (default SVC_PREVIEW_DOMAIN), or locally `<app>-<id>.localhost:<port of this server>`.
 * Every app is an origin of its own, served by the API through the app sandbox's socket
 * (never a raw port of the host): its pages cannot read the dashboard or another app, the
 * dashboard's `__Host-` cookies never reach it, and it cannot set one the dashboard reads.
 */
type AppsConfig = Pick<Config, 'SVC_APPS_DOMAIN' | 'SVC_PREVIEW_DOMAIN' | 'SVC_PUBLIC_URL'>;

const APP_LABEL = /^[a-z0-9][a-z0-9-]*-([0-9a-f]{12})$/;

/** The apps' domain: configured, the previews', or `localhost` on a loopback install. */
export const appsDomainOf = (config: AppsConfig): string => (config.SVC_APPS_DOMAIN ?? config.SVC_PREVIEW_DOMAIN ?? 'localhost').toLowerCase().replace(/:\d+$/, '');

const projectHex = (projectId: string) => projectId.replace(/-/g, '').slice(0, 12).toLowerCase();

/**
 * The app's DNS label: `<name>-<12 hex>`. A name too long for one label (63; the manifest
 * warns) or whose label would read as a preview's gets `<start of name>-<16 hex of its
 * sha256>-<12 hex>` instead.
 */
export function appLabel(name: string, projectId: string): string {
  const hex = projectHex(projectId);
  const plain = `${name}-${hex}`;
  if (name.length <= APP_LABEL_NAME_MAX && !PREVIEW_LABEL.test(plain)) return plain;
  const h = createHash('sha256').update(name).digest('hex').slice(0, 16);
  return `${name.slice(0, 33).replace(/-+$/, '')}-${h}-${hex}`;
}

const hostnameOf = (host: string | undefined): string => {
  const h = (host ?? '').trim().toLowerCase();
  return h.startsWith('[') ? h : h.replace(/:\d*$/, '').replace(/\.$/, '');
};

export type AppHost = { label: string; projectHex: string } | 'unknown';

/**
 * A Host header under the apps' domain: the app label it names, or `unknown` (a name there
 * that is no app: 404, never the API). Null for any other host, and for a preview's label
 * when apps and previews share a domain (the preview handler answers it).
 */
export function parseAppHost(host: string | undefined, config: AppsConfig): AppHost | null {
  const name = hostnameOf(host);
  const domain = appsDomainOf(config);
  if (!name.endsWith(`.${domain}`)) return null;
  const label = name.slice(0, -(domain.length + 1));
  if (PREVIEW_LABEL.test(label) && domain === (config.SVC_PREVIEW_DOMAIN ?? 'localhost').toLowerCase().replace(/:\d+$/, '')) return null;
  const m = APP_LABEL.exec(label);
  return m ? { label, projectHex: m[1]! } : 'unknown';
}

/** The uuid range of the projects whose id starts with `hex` (12 hex): an index range scan. */
export function projectIdRange(hex: string): [string, string] {
  const head = `${hex.slice(0, 8)}-${hex.slice(8, 12)}`;
  return [`${head}-0000-0000-000000000000`, `${head}-ffff-ffff-ffffffffffff`];
}

/**
 * The app's origin as a browser reaches it. `listenPort`: the port this server answers on
 * (locally the apps share it).
 */
export function appOrigin(config: AppsConfig, name: string, projectId: string, listenPort: number): string {
  const label = appLabel(name, projectId);
  const pub = config.SVC_PUBLIC_URL ? new URL(config.SVC_PUBLIC_URL) : null;
  const domain = config.SVC_APPS_DOMAIN ?? config.SVC_PREVIEW_DOMAIN;
  if (domain) return `${pub ? pub.protocol : 'http:'}//${label}.${domain.toLowerCase()}`;
  const p = pub && isLoopbackHost(pub.hostname) && pub.port ? pub.port : String(listenPort);
  return `http://${label}.localhost:${p}`;
}

/**
 * Every app origin, as a CSP source: the dashboard's `form-action` holds it, because the
 * sign-in form a members-only app sent the browser to redirects back to the app.
 */
export function appsSource(config: AppsConfig): string {
  const domain = config.SVC_APPS_DOMAIN ?? config.SVC_PREVIEW_DOMAIN;
  if (!domain) return 'http://*.localhost:*';
  const scheme = config.SVC_PUBLIC_URL ? new URL(config.SVC_PUBLIC_URL).protocol : 'http:';
  return `${scheme}//*.${domain.toLowerCase()}`;
}
