import { EventEmitter } from 'node:events';
import { expect } from 'chai';
import type { Request, Response } from 'express';
import { bodyBudget, MiB } from '../../../api/body.js';
import { DomainError } from '../../../domain/errors.js';

/**
 * The model gateway's bodies, all senders together: a parsed JSON body costs many times its
 * bytes on the heap, so large ones at once (each within its limit, each with a valid key)
 * could end the process every tenant shares. Past the bound a body is refused unread.
 */
describe('bodyBudget: the bytes of bodies a door holds at once', () => {
  const budget = bodyBudget(64 * MiB, 32 * MiB);
  const call = (headers: Record<string, string>) => {
    const req = { headers } as unknown as Request;
    const res = new EventEmitter() as unknown as Response;
    let outcome: unknown = 'pending';
    budget(req, res, (err?: unknown) => void (outcome = err ?? 'read'));
    return { res: res as unknown as EventEmitter, outcome: () => outcome };
  };

  it('two 30 MiB bodies fit, a third waits for one to end (429, retry shortly, unread); chunked ones count their whole limit', () => {
    const a = call({ 'content-length': String(30 * MiB) });
    const b = call({ 'content-length': String(30 * MiB) });
    expect([a.outcome(), b.outcome()]).to.deep.equal(['read', 'read']);
    const c = call({ 'content-length': String(30 * MiB) });
    expect(c.outcome()).to.be.instanceOf(DomainError).with.property('code', 'rate_limited');
    expect((c.outcome() as DomainError).details.retry_after).to.equal(1);
    a.res.emit('close');
    a.res.emit('finish'); // released once, however the answer ends
    expect(call({ 'transfer-encoding': 'chunked' }).outcome(), 'a chunked body holds the 32 MiB limit: 30 + 32 fit').to.equal('read');
    expect(call({ 'content-length': String(3 * MiB) }).outcome()).to.be.instanceOf(DomainError);
    expect(call({}).outcome(), 'no body: nothing held').to.equal('read');
  });
});
