import { Router } from 'express';
import type { ApiDeps } from '../deps.js';
import { principalOf, requireUserToken } from '../auth.js';
import { CreateTokenBody } from '../schemas.js';
import { accountQueries } from '../../sql/queries/accounts.js';
import { mintToken } from '../../infra/tokens.js';

/** `/v1/accounts/*`: user tokens only; project tokens get 403. */
export function accountRoutes(deps: ApiDeps): Router {
  const r = Router();
  r.use(requireUserToken);

  r.get('/me', async (req, res) => {
    const p = principalOf(req);
    const accounts = await deps.db.rows<{ account_id: string; name: string; role: string }>(accountQueries.accountsOfUser(p.user_id));
    res.json({
      user: { user_id: p.user_id, email: p.email, name: p.user_name },
      account: accounts[0] ?? null,
      accounts,
    });
  });

  r.post('/tokens', async (req, res) => {
    const body = CreateTokenBody.parse(req.body ?? {});
    const p = principalOf(req);
    const minted = await mintToken(deps.db, { userId: p.user_id, name: body.name ?? '' });
    res.status(201).json(minted);
  });

  return r;
}
