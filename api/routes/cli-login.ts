import { Router } from 'express';
import { redeemCliLogin } from '../../services/dashboard/cli-logins.js';
import type { ApiDeps } from '../deps.js';
import { RedeemCliLoginBody } from '../../contracts/accounts.js';

/** `svc login`'s last step, before any token exists: the code from the browser's approval. */
export function cliLoginRoutes(deps: Pick<ApiDeps, 'db'>): Router {
  const r = Router();
  r.post('/token', async (req, res) => {
    const body = RedeemCliLoginBody.parse(req.body ?? {});
    res.status(201).json(await redeemCliLogin(deps.db, body.state, body.code));
  });
  return r;
}
