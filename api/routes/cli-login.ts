import { Router } from 'express';
import { DomainError } from '../../domain/errors.js';
import type { ApiDeps } from '../deps.js';
import { RedeemCliLoginBody, StartCliLoginBody } from '../../contracts/accounts.js';

/**
 * `svc login`'s API half, before any token exists (services/dashboard/cli-logins.ts):
 * `POST /v1/cli/login` registers the login and gives the CLI its user code;
 * `POST /v1/cli/login/token` redeems the approval's one-time code with the PKCE verifier.
 * A failed redemption counts against the caller's failed-auth bucket.
 */
export function cliLoginRoutes(deps: Pick<ApiDeps, 'services' | 'guard'>): Router {
  const r = Router();
  r.post('/', async (req, res) => {
    const body = StartCliLoginBody.parse(req.body ?? {});
    res.set('Cache-Control', 'no-store');
    res.status(201).json(await deps.services.dashboard.startCliLogin({ callback: body.callback, codeChallenge: body.code_challenge, ...(body.hostname !== undefined ? { hostname: body.hostname } : {}) }));
  });
  r.post('/token', async (req, res) => {
    const body = RedeemCliLoginBody.parse(req.body ?? {});
    let refused: unknown;
    const minted = await deps.guard.attempt(req, () =>
      deps.services.dashboard.redeemCliLogin(body.state, body.code, body.code_verifier).catch((err: unknown) => {
        if (!(err instanceof DomainError && err.code === 'validation')) throw err;
        refused = err;
        return null;
      }),
    );
    if (!minted) throw refused;
    res.status(201).json(minted);
  });
  return r;
}
