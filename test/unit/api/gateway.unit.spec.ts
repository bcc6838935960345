import { IncomingMessage } from 'node:http';
import { Socket } from 'node:net';
import { expect } from 'chai';
import { attachGateway, checkGateway, gatewayOf } from '../../../api/gateway.js';
import { DomainError } from '../../../domain/errors.js';

const expectDomainError = (fn: () => void, code: string) => {
  try {
    fn();
  } catch (e) {
    expect(e).to.be.instanceOf(DomainError);
    expect((e as DomainError).code).to.equal(code);
    return;
  }
  throw new Error('expected a DomainError');
};

/** The sandbox gateway's identity check: the door a credential may use. */
describe('sandbox gateway identity (api/gateway.ts)', () => {
  const req = (headers: Record<string, string> = {}) => {
    const r = new IncomingMessage(new Socket());
    Object.assign(r.headers, headers);
    return r;
  };
  const sbxA = { sandbox_id: 'a', provider: 'bwrap' };
  const sbxB = { sandbox_id: 'b', provider: 'docker' };

  it("through a sandbox's gateway: only that sandbox's credentials", () => {
    const r = req();
    attachGateway(r, { sandboxId: 'a' });
    expect(gatewayOf(r)).to.deep.equal({ sandboxId: 'a' });
    expect(() => checkGateway(r, sbxA)).to.not.throw();
    expectDomainError(() => checkGateway(r, sbxB), 'unauthorized');
    expectDomainError(() => checkGateway(r, null), 'unauthorized'); // a person's token
  });

  it('on the public listener: no sandbox credential (kubernetes pods excepted: they have no socket)', () => {
    expect(() => checkGateway(req(), null)).to.not.throw();
    expectDomainError(() => checkGateway(req(), sbxA), 'unauthorized');
    expectDomainError(() => checkGateway(req(), { sandbox_id: 'c', provider: 'process' }), 'unauthorized');
    expectDomainError(() => checkGateway(req(), { sandbox_id: 'c', provider: null }), 'unauthorized');
    expect(() => checkGateway(req(), { sandbox_id: 'k', provider: 'kubernetes' })).to.not.throw();
  });

  it('the identity travels in-process: no header claims it, and it cannot be rewritten once attached', () => {
    const r = req({ 'x-svc-sandbox-id': 'a', 'x-svc-gateway': 'a', forwarded: 'for=a' });
    expect(gatewayOf(r)).to.equal(undefined);
    expectDomainError(() => checkGateway(r, sbxA), 'unauthorized');
    attachGateway(r, { sandboxId: 'b' });
    expect(() => attachGateway(r, { sandboxId: 'a' })).to.throw(TypeError);
    expect(gatewayOf(r)).to.deep.equal({ sandboxId: 'b' });
    expect(() => {
      (gatewayOf(r) as { sandboxId: string }).sandboxId = 'a';
    }).to.throw(TypeError);
  });
});
