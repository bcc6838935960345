import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { repoCredentials } from '../../../infra/git/credentials.js';
import { secretBox } from '../../../infra/secret-box.js';

describe('repoCredentials: the one reader of a project\'s stored repository credentials', () => {
  const box = secretBox(randomBytes(32));

  it('opens what the API stored; none stored is undefined', () => {
    const sealed = box.seal(JSON.stringify({ username: 'x-access-token', password: 's3cret' }));
    expect(repoCredentials(box, { repo_credentials_enc: sealed })).to.deep.equal({ username: 'x-access-token', password: 's3cret' });
    expect(repoCredentials(box, { repo_credentials_enc: null })).to.equal(undefined);
  });

  it('refuses a stored value that is not a username and password, without echoing it', () => {
    const sealed = box.seal(JSON.stringify({ token: 's3cret' }));
    expect(() => repoCredentials(box, { repo_credentials_enc: sealed })).to.throw(/not a username and password/).with.property('message').that.does.not.include('s3cret');
  });
});
