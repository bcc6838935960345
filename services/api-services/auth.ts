import type { Executor } from '../../infra/db/db.js';
import { authenticate, authenticateWithProject } from '../tokens/service.js';
import { authenticateSandboxKey, credentialSandbox, sandboxProvider } from '../sessions/credentials.js';
import { bind } from './bind.js';

/** Credentials: the one authentication path of every route (`requireAuth`, smart HTTP, the proxies, the sandbox keys). */
export function authServices({ db }: { db: Executor }) {
  return {
    /** A bearer token's principal, null for no live token. */
    authenticate: bind(db, authenticate),
    /** The token and the project the path names (and a CR row), in one statement. */
    authenticateWithProject: bind(db, authenticateWithProject),
    /** The sandbox a principal's credential belongs to (null: a person's). */
    credentialSandbox: bind(db, credentialSandbox),
    /** A sandbox's service key (SVC_TOKEN), null for none. */
    sandboxKey: bind(db, authenticateSandboxKey),
    /** The provider that runs a sandbox (the gateway rule's exception). */
    sandboxProvider: bind(db, sandboxProvider),
  };
}
