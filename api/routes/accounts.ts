import { Router } from 'express';
import type { ApiDeps } from '../deps.js';
import { principalOf, requireUserToken } from '../auth.js';
import { CreateTokenBody } from '../../contracts/accounts.js';
import { notFound } from '../../domain/errors.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const iso = (d: Date | null) => (d ? d.toISOString() : null);

/** `/v1/accounts/*`: user tokens only; project tokens get 403. */
export function accountRoutes(deps: ApiDeps): Router {
  const r = Router();
  r.use(requireUserToken);

  r.get('/me', async (req, res) => {
    const p = principalOf(req);
    const accounts = await deps.services.projects.accountsOf(p.user_id);
    res.json({
      user: { user_id: p.user_id, email: p.email, name: p.user_name },
      account: accounts[0] ?? null,
      accounts,
      token_id: p.token_id,
    });
  });

  r.post('/tokens', async (req, res) => {
    const body = CreateTokenBody.parse(req.body ?? {});
    const p = principalOf(req);
    const expiresAt = body.expires_in_days ? new Date(Date.now() + body.expires_in_days * 86_400_000) : null;
    const minted = await deps.services.projects.mintToken({ userId: p.user_id, name: body.name ?? '', expiresAt });
    res.status(201).json(minted);
  });

  /** The caller's live tokens (user and project tokens); never their values. */
  r.get('/tokens', async (req, res) => {
    const rows = await deps.services.projects.listTokens(principalOf(req).user_id);
    res.json({
      tokens: rows.map((t) => ({
        token_id: t.token_id,
        name: t.name,
        project_id: t.project_id,
        created_at: t.created_at.toISOString(),
        expires_at: iso(t.expires_at),
        last_used_at: iso(t.last_used_at),
      })),
    });
  });

  r.delete('/tokens/:tokenId', async (req, res) => {
    const id = String(req.params.tokenId);
    const done = UUID.test(id) && (await deps.services.projects.revokeToken(principalOf(req).user_id, id.toLowerCase()));
    if (!done) throw notFound('Token');
    res.status(204).end();
  });

  return r;
}
