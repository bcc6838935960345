import { expect } from 'chai';
import { DomainError } from '../../domain/errors.js';
import { assertBranchName, assertSha, branchNameProblem, isValidBranchName, MAX_BRANCH_NAME } from '../../domain/refs.js';

describe('branch name rules (git check-ref-format --branch)', () => {
  const table: Array<[string, boolean]> = [
    ['main', true],
    ['feature/login-form', true],
    ['6f1c2a4e-9b1d-4c1e-8f00-0123456789ab', true],
    ['release/v1.2.3', true],
    ['x/HEAD', true],
    ['ümlaut', true],
    ['a@b', true],
    ['', false],
    ['-x', false],
    ['--upload-pack=evil', false],
    ['HEAD', false],
    ['@', false],
    ['a..b', false],
    ['../etc/passwd', false],
    ['a/../b', false],
    ['a@{1}', false],
    ['@{-1}', false],
    ['a b', false],
    ['a\tb', false],
    ['a\u0000b', false],
    ['a\u007fb', false],
    ['a~1', false],
    ['a^', false],
    ['a:b', false],
    ['a?', false],
    ['a*', false],
    ['a[b', false],
    ['a\\b', false],
    ['a.lock', false],
    ['a.lock/b', false],
    ['.a', false],
    ['a/.b', false],
    ['a//b', false],
    ['/a', false],
    ['a/', false],
    ['a.', false],
    ['a'.repeat(MAX_BRANCH_NAME), true],
    ['a'.repeat(MAX_BRANCH_NAME + 1), false],
  ];
  for (const [name, ok] of table) {
    it(`${JSON.stringify(name.length > 40 ? `${name.slice(0, 12)}…(${name.length})` : name)} is ${ok ? 'valid' : 'rejected'}`, () => {
      expect(isValidBranchName(name), String(branchNameProblem(name))).to.equal(ok);
    });
  }

  it('assertBranchName throws a validation DomainError naming the field', () => {
    try {
      assertBranchName('-rf', 'head_ref');
      expect.fail('should throw');
    } catch (e) {
      expect(e).to.be.instanceOf(DomainError);
      expect((e as DomainError).code).to.equal('validation');
      expect((e as DomainError).details.issues).to.deep.equal([{ path: 'head_ref', message: "invalid branch name: must not start with '-'" }]);
    }
    expect(assertBranchName('main')).to.equal('main');
  });

  it('assertSha accepts full lowercase sha1/sha256 ids only', () => {
    expect(assertSha('a'.repeat(40))).to.equal('a'.repeat(40));
    expect(assertSha('0'.repeat(64))).to.equal('0'.repeat(64));
    for (const bad of ['A'.repeat(40), 'a'.repeat(39), 'a'.repeat(41), 'HEAD', '--all', 'main', `${'a'.repeat(40)}^`, '']) {
      expect(() => assertSha(bad), bad).to.throw(DomainError);
    }
  });
});
