import type { ServiceWiring } from './index.js';
import * as gateway from '../llm/gateway.js';
import * as ledger from '../llm/ledger.js';
import { gatewayModels } from '../sessions/model-choice.js';
import { bind } from './bind.js';

/** The model gateway (`/v1/llm`): a sandbox's key, the models on offer, the call's reservation, the upstream and its usage. */
export function llmServices(w: ServiceWiring) {
  const g: gateway.GatewayDeps = { config: w.config, db: w.db, logger: w.logger.child({ component: 'llm-gateway' }) };
  return {
    logger: g.logger,
    authorize: bind(g, gateway.authorizeCall),
    models: () => gatewayModels(w.config),
    /** The model asked for, if this server offers it, with the upstream configured (503 otherwise). */
    assertCallable(model: unknown): string {
      const allowed = gateway.assertModelAllowed(w.config, model);
      gateway.upstreamUrl(w.config);
      return allowed;
    },
    reserve: bind(g, ledger.reserve),
    callUpstream: bind(g, gateway.callUpstream),
    settle: bind(w.db, ledger.settle),
    recordUsage: bind(g, gateway.recordUsage),
  };
}
