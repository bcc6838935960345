import { expect } from 'chai';
import { contractProblems } from './openapi-contract.js';
import { makeCR, PROJECT } from './helpers.js';

/** The checker the CLI's nock fixtures go through can fail: each way a fixture drifts from the API is caught. */
describe('CLI fixtures vs the OpenAPI document', () => {
  const crs = `/v1/projects/${PROJECT.project_id}/change-requests`;

  it('accepts a fixture the API would really send', () => {
    expect(contractProblems({ method: 'GET', path: `${crs}/3`, status: 200, replyBody: { change_request: makeCR() } })).to.deep.equal([]);
    expect(contractProblems({ method: 'GET', path: '/v1/projects', status: 200, replyBody: { projects: [PROJECT], next_cursor: null } })).to.deep.equal([]);
  });

  it('refuses an unknown operation, an undeclared status, a reply missing a field or with a wrong type, a bad request body', () => {
    expect(contractProblems({ method: 'GET', path: '/v1/nothing-here', status: 200 })[0]).to.match(/no such operation/);
    expect(contractProblems({ method: 'DELETE', path: `${crs}/3`, status: 200 })[0]).to.match(/no such operation/);
    expect(contractProblems({ method: 'POST', path: `${crs}/3/close`, status: 418, replyBody: {} })[0]).to.match(/status 418 is not declared/);
    const { title: _t, ...untitled } = makeCR();
    expect(contractProblems({ method: 'GET', path: `${crs}/3`, status: 200, replyBody: { change_request: untitled } }).join()).to.match(/missing required 'title'/);
    expect(contractProblems({ method: 'GET', path: `${crs}/3`, status: 200, replyBody: { change_request: makeCR({ number: '3' }) } }).join()).to.match(/number: expected/);
    expect(contractProblems({ method: 'GET', path: `${crs}/3`, status: 200, replyBody: { change_request: makeCR({ status: 'done' }) } }).join()).to.match(/not in/);
    expect(contractProblems({ method: 'POST', path: crs, requestBody: { title: 'T' }, status: 201, replyBody: { change_request: makeCR() } }).join()).to.match(/missing required 'head_ref'/);
    expect(contractProblems({ method: 'GET', path: '/v1/accounts/me', status: 401, replyBody: { error: 'Unauthorized' } }).join()).to.match(/missing required 'message'/);
  });
});
