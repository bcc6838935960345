import { egressPolicy } from '../../infra/egress/policy.js';
import { repoUrlPolicy } from '../../infra/git/url-policy.js';
import { startEgressProxy, type EgressProxy } from '../../infra/egress/proxy.js';
import { egressRefusals, egressRulesFor } from '../../services/sessions/egress.js';
import type { Core, Running } from './core.js';

export interface EgressWiring extends Running {
  /**
   * Serves one socket accepted on a sandbox's egress socket, with the identity that socket
   * was opened for (never read from the connection): the gateway hub
   * (ops/wiring/gateway.ts, wired in ops/wiring/sessions.ts) calls
   * `proxy.handle(socket, {sandboxId, projectId})`.
   */
  proxy: EgressProxy;
}

/**
 * The sandboxes' egress proxy: one per server process, serving every
 * sandbox gateway of this process. The operator's blocked hosts (SVC_REPO_BLOCKED_HOSTS)
 * apply to it as to every outbound URL; nothing in the configuration loosens its address
 * rules.
 */
export function wireEgress(core: Core, opts: { admitFd?: () => boolean } = {}): EgressWiring {
  const { config, logger, db, repos } = core;
  const refusals = egressRefusals({ db, logger });
  const proxy = startEgressProxy({
    policy: egressPolicy({ blockedHosts: repoUrlPolicy(config).blockedHosts }),
    rulesFor: egressRulesFor({ db, repos }),
    onRefused: (id, r) => refusals.record(id, r),
    logger,
    ...(opts.admitFd ? { admitFd: opts.admitFd } : {}),
  });
  return {
    proxy,
    close: async () => {
      await proxy.close();
      await refusals.settled();
    },
  };
}
