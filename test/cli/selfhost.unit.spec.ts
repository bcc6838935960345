import { expect } from 'chai';
import { CliError } from '../../cli/errors.js';
import { composeArgs, PROJECT_NAME } from '../../cli/selfhost.js';
import { makeFactory } from './helpers.js';

describe('svc self-host: the compose project name', () => {
  const args = (env: Record<string, string>) => composeArgs(makeFactory({ configPath: '/nonexistent/config.json', env: { HOME: '/home/x', ...env } }).f, ['docker', 'compose'], ['up', '-d']).args;

  it('is svc-selfhost unless SVC_SELFHOST_PROJECT names another', () => {
    expect(args({}).slice(0, 3)).to.deep.equal(['compose', '-p', PROJECT_NAME]);
    expect(args({ SVC_SELFHOST_PROJECT: '' }).slice(0, 3)).to.deep.equal(['compose', '-p', 'svc-selfhost']);
    expect(args({ SVC_SELFHOST_PROJECT: 'svc-e2e-1a2b' }).slice(0, 3)).to.deep.equal(['compose', '-p', 'svc-e2e-1a2b']);
  });

  it('refuses a name compose would not take or would read as an option', () => {
    for (const bad of ['--volumes', '-v', 'Upper', 'a b', '../x', 'x'.repeat(64)]) {
      expect(() => args({ SVC_SELFHOST_PROJECT: bad }), bad).to.throw(CliError, /invalid SVC_SELFHOST_PROJECT/);
    }
  });
});
