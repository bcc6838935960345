import type { ServiceWiring } from './index.js';
import { decideCliLogin, openCliLogin, redeemCliLogin, startCliLogin } from '../dashboard/cli-logins.js';
import { clearSignInFailures, recordSignInFailure, signInWait, userByEmail } from '../dashboard/sign-in.js';
import { lastProjectPosition } from '../dashboard/live.js';
import { bind } from './bind.js';

/** The dashboard's own: sign-in, `svc login` approvals, the live page's position. */
export function dashboardServices(w: ServiceWiring) {
  return {
    signInWait: bind(w.db, signInWait),
    recordSignInFailure: bind(w.db, recordSignInFailure),
    clearSignInFailures: bind(w.db, clearSignInFailures),
    userByEmail: bind(w.db, userByEmail),
    startCliLogin: bind(w.db, startCliLogin),
    openCliLogin: bind(w.db, openCliLogin),
    decideCliLogin: bind(w.db, decideCliLogin),
    redeemCliLogin: bind(w.db, redeemCliLogin),
    lastProjectPosition: bind(w.db, lastProjectPosition),
  };
}
