/**
 * nock for one describe block: intercepting and refusing real connections only while the
 * block runs, so other test files sharing a mocha worker see a plain `node:http`.
 *
 * Every stub defined inside the block is checked against the server's OpenAPI document
 * when it is defined (test/cli/openapi-contract.ts): an operation that does not exist, a
 * request body or reply the API would not send or accept, or an undeclared status fails
 * the test that wrote it, so an API change that breaks the CLI fails a CLI test.
 */
import { expect } from 'chai';
import nock from 'nock';
import { contractProblems } from './openapi-contract.js';

interface InterceptorLike {
  method: string;
  path: string;
  _requestBody?: unknown;
  reply(...args: unknown[]): unknown;
}

/** Stubs of endpoints that are not part of the API document (e.g. a browser login's callback host). */
const OUTSIDE_API = [/^\/(?!v1\/)/];

let offContract = 0;
/** Defines stubs that deliberately break the contract (a malformed reply the CLI must survive). */
export function offContractStub<T>(define: () => T): T {
  offContract++;
  try {
    return define();
  } finally {
    offContract--;
  }
}

export function useNock(): void {
  const problems: string[] = [];
  let proto: InterceptorLike | undefined;
  let original: InterceptorLike['reply'] | undefined;
  before(() => {
    if (!nock.isActive()) nock.activate();
    nock.disableNetConnect();
    proto = Object.getPrototypeOf(nock('http://contract.invalid').get('/')) as InterceptorLike;
    nock.cleanAll();
    original = proto.reply;
    const orig = original;
    proto.reply = function (this: InterceptorLike, ...args: unknown[]) {
      const [status, body] = args;
      const path = String(this.path).replace(/\?.*$/, '');
      if (offContract === 0 && typeof status === 'number' && typeof body !== 'function' && !OUTSIDE_API.some((re) => re.test(path))) {
        const requestBody = this._requestBody !== null && typeof this._requestBody === 'object' && !(this._requestBody instanceof RegExp) ? this._requestBody : undefined;
        problems.push(...contractProblems({ method: this.method, path, requestBody, status, replyBody: body }));
      }
      return orig.apply(this, args);
    };
  });
  after(() => {
    if (proto && original) proto.reply = original;
    nock.cleanAll();
    nock.enableNetConnect();
    nock.restore();
  });
  afterEach(() => {
    const pending = nock.pendingMocks();
    nock.cleanAll();
    const found = problems.splice(0);
    expect(found, 'stubs that disagree with the OpenAPI document').to.deep.equal([]);
    expect(pending, 'unused HTTP stubs').to.deep.equal([]);
  });
}
