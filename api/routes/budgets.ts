import { Router, type Request } from 'express';
import type { ApiDeps } from '../deps.js';
import { principalOf, requireUserToken } from '../auth.js';
import { resolveProject } from '../project-access.js';
import { SetBudgetBody } from '../../contracts/budgets.js';
import type { BudgetTarget } from '../../services/budgets/service.js';

/**
 * `/v1/projects/:projectId/budget` and `/v1/accounts/:accountId/budget`: the model budget
 * a person sets (docs/models.md "Budgets a person sets"). `GET` -> `{"budget"}` (null: none);
 * `PUT {"unit","period","limit"}` sets it, `PUT {"limit":null}` removes it. Agent
 * credentials are refused before these routes (api/agent-gate.ts): an agent cannot raise
 * the budget that holds it.
 */
export function projectBudgetRoutes(deps: ApiDeps): Router {
  return budgetRoutes(deps, Router({ mergeParams: true }), async (req) => ({ scope: 'project', scopeId: (await resolveProject(deps, req)).project_id }));
}

/** An account's: its members, with a user token (a project token is scoped to one project). */
export function accountBudgetRoutes(deps: ApiDeps): Router {
  const r = Router({ mergeParams: true });
  r.use(requireUserToken);
  return budgetRoutes(deps, r, async (req) => ({ scope: 'account', scopeId: await deps.services.budgets.accountFor(principalOf(req).user_id, String(req.params.accountId ?? '')) }));
}

/** The two routes of a budget, whichever scope `target` resolves. */
function budgetRoutes(deps: ApiDeps, r: Router, target: (req: Request) => Promise<BudgetTarget>): Router {
  r.get('/', async (req, res) => {
    res.json({ budget: await deps.services.budgets.get(await target(req)) });
  });
  r.put('/', async (req, res) => {
    const t = await target(req);
    const body = SetBudgetBody.parse(req.body ?? {});
    res.json({ budget: await deps.services.budgets.set(t, body, principalOf(req).user_id) });
  });
  return r;
}
