import type { IncomingMessage } from 'node:http';
import { DomainError } from '../domain/errors.js';

/**
 * The sandbox gateway's identity check (docs/hardening.md). A request
 * that came in through a sandbox's gateway socket carries that sandbox's id, attached
 * in-process by the listener that accepted it (ops/wiring/gateway.ts): never a header, so
 * nothing a client sends can claim it. Every credential minted for a sandbox (its service
 * key, its CLI token, its clone credentials, a model key) names its sandbox; the rule:
 *   - through a gateway: only that sandbox's credentials;
 *   - on the public listener: no sandbox credential (kubernetes sandboxes excepted: they
 *     have no socket and reach the server over the pod network, see docs/sandbox-providers.md).
 */
export interface GatewayIdentity {
  sandboxId: string;
}

const GATEWAY = Symbol('svc.sandbox-gateway');

export function attachGateway(req: IncomingMessage, identity: GatewayIdentity): void {
  Object.defineProperty(req, GATEWAY, { value: Object.freeze({ ...identity }), enumerable: false, writable: false });
}

export function gatewayOf(req: IncomingMessage): GatewayIdentity | undefined {
  return (req as unknown as Record<symbol, GatewayIdentity | undefined>)[GATEWAY];
}

/** A credential's sandbox: its id, and the provider that runs it (null: not a sandbox credential). */
export interface CredentialSandbox {
  sandbox_id: string;
  provider: string | null;
}

const wrongDoor = (message: string) => new DomainError('unauthorized', 'Unauthorized', message);

/**
 * Throws 401 unless `credential` (the sandbox a principal's credential belongs to, null for
 * a person's) may be used on the listener `req` came in on.
 */
export function checkGateway(req: IncomingMessage, credential: CredentialSandbox | null): void {
  const gw = gatewayOf(req);
  if (gw) {
    if (!credential || credential.sandbox_id !== gw.sandboxId) {
      throw wrongDoor("Through a sandbox's gateway only that sandbox's own credentials are accepted.");
    }
    return;
  }
  if (credential && credential.provider !== 'kubernetes') {
    throw wrongDoor("A sandbox's credentials are accepted only through that sandbox's gateway.");
  }
}
