import type { IncomingMessage } from 'node:http';
import { expect } from 'chai';
import type { NextFunction, Request, Response } from 'express';
import { appHostHandler } from '../../../api/app-host.js';
import { settingsOf, type ApiDeps } from '../../../api/deps.js';
import { attachGateway } from '../../../api/gateway.js';
import { previewHostHandler } from '../../../api/preview-host.js';
import { loadConfig } from '../../../infra/config.js';

/**
 * A sandbox chooses the Host header of what it sends through its gateway socket. Were an
 * app's or a preview's host routed there, a sandbox with `egress = []` could hand data to
 * another tenant's public app (a way out its egress policy never sees). Through a gateway
 * those hosts are nobody's: the request goes on to the API, which has no such route.
 */
describe('app and preview hosts through a sandbox gateway', () => {
  const config = loadConfig({ SVC_DATA_DIR: '/tmp/svc-unit', SVC_APPS_DOMAIN: 'apps.svc.test', SVC_PREVIEW_DOMAIN: 'preview.svc.test', SVC_PUBLIC_URL: 'https://svc.test' });
  // Any use of a service (looking the app or the grant up) fails the test.
  const services = new Proxy({}, { get: () => { throw new Error('a service was asked'); } });
  const deps = { settings: settingsOf(config), services } as unknown as ApiDeps;

  const through = (host: string, gateway: boolean): { next: boolean; answered: boolean } => {
    const req = { headers: { host }, method: 'GET', path: '/', originalUrl: '/?d=secret', socket: {} } as unknown as Request;
    if (gateway) attachGateway(req as unknown as IncomingMessage, { sandboxId: 'sb-1' });
    let answered = false;
    const res = new Proxy({}, { get: () => () => ((answered = true), res) }) as unknown as Response;
    let next = false;
    const done: NextFunction = () => void (next = true);
    for (const h of [appHostHandler(deps), previewHostHandler(deps)]) {
      next = false;
      h(req, res, done);
      if (!next) break;
    }
    return { next, answered };
  };

  it("an app's host (public or not) is never routed to the app through a gateway", () => {
    expect(through('drop-0123456789ab.apps.svc.test', true)).to.deep.equal({ next: true, answered: false });
  });

  it("a preview's host is never routed to the preview through a gateway", () => {
    expect(through('p3000-0b9a3d1e-1111-4222-8333-944445555666.preview.svc.test', true)).to.deep.equal({ next: true, answered: false });
  });

  it('on the public listener the same hosts are the apps\' and previews\' (the handlers take them)', () => {
    expect(through('drop-0123456789ab.apps.svc.test', false).next, 'taken by the app host handler').to.equal(false);
  });
});
