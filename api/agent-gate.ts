import type { RequestHandler } from 'express';
import { agentActionOf, assertMay, isAgent } from '../services/tokens/agent-policy.js';

/**
 * In front of every `/v1` route, after the token is known: an agent-grade principal passes
 * only what services/tokens/agent-policy.ts allows for this method and path. Reads pass;
 * the CR commands it may use go on to their routes, which check the CR itself; anything
 * else is refused here (403 `agent_forbidden`, a merge 403 `agent_cannot_merge`), before
 * any route runs. People's tokens pass untouched.
 */
export const agentGate: RequestHandler = (req, _res, next) => {
  try {
    const p = req.principal;
    if (p && isAgent(p)) {
      const action = agentActionOf(req.method, req.path);
      if (action !== 'route-checks') assertMay(p, action);
    }
    next();
  } catch (err) {
    next(err);
  }
};
