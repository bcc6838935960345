import type { Config } from '../infra/config.js';
import type { Logger } from '../lib/logger.js';
import type { Metrics } from './metrics.js';
import type { ApiServices } from '../services/api-services/index.js';
import type { AuthGuard } from './auth.js';

/** The configuration values routes and pages render with (origins, the metrics token): built once, never the whole config. */
export type ApiSettings = Pick<Config, 'SVC_PUBLIC_URL' | 'SVC_PUBLIC_HOSTS' | 'SVC_PREVIEW_DOMAIN' | 'SVC_APPS_DOMAIN' | 'SVC_METRICS_TOKEN'>;

export const settingsOf = (c: Config): ApiSettings => ({
  SVC_PUBLIC_URL: c.SVC_PUBLIC_URL,
  SVC_PUBLIC_HOSTS: c.SVC_PUBLIC_HOSTS,
  SVC_PREVIEW_DOMAIN: c.SVC_PREVIEW_DOMAIN,
  SVC_APPS_DOMAIN: c.SVC_APPS_DOMAIN,
  SVC_METRICS_TOKEN: c.SVC_METRICS_TOKEN,
});

/**
 * Everything a route module may use, passed in (no module-level singletons): services,
 * never the database or the whole configuration. A route parses its input, calls one
 * service function and maps the result (docs/development.md "A new route").
 */
export interface ApiDeps {
  /** Every workflow the routes call, built once by the wiring (services/api-services/). */
  services: ApiServices;
  /** The failed-authentication limit every credential check shares (one per server). */
  guard: AuthGuard;
  settings: ApiSettings;
  logger: Logger;
  metrics: Metrics;
}
