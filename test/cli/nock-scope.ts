/**
 * nock for one describe block: intercepting and refusing real connections only while the
 * block runs, so other test files sharing a mocha worker see a plain `node:http`.
 */
import { expect } from 'chai';
import nock from 'nock';

export function useNock(): void {
  before(() => {
    if (!nock.isActive()) nock.activate();
    nock.disableNetConnect();
  });
  after(() => {
    nock.cleanAll();
    nock.enableNetConnect();
    nock.restore();
  });
  afterEach(() => {
    const pending = nock.pendingMocks();
    nock.cleanAll();
    expect(pending, 'unused HTTP stubs').to.deep.equal([]);
  });
}
