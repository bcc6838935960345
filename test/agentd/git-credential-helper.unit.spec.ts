import { PassThrough } from 'node:stream';
import { expect } from 'chai';
import { helperCommand, parseCredentialRequest, runGitCredentialHelper } from '../../agentd/git-credential-helper.js';

async function helper(op: string, input: string, env: NodeJS.ProcessEnv): Promise<string> {
  const stdin = new PassThrough();
  const stdout = new PassThrough();
  let out = '';
  stdout.on('data', (d: Buffer) => (out += d.toString()));
  stdin.end(input);
  await runGitCredentialHelper(op, env, stdin, stdout, new PassThrough());
  return out;
}

describe('agentd git credential helper', () => {
  it('parses what git sends', () => {
    expect(parseCredentialRequest('protocol=https\nhost=git.example.com\npath=r.git\n\n')).to.deep.equal({
      protocol: 'https',
      host: 'git.example.com',
      path: 'r.git',
    });
  });

  it('answers nothing for store/erase, or for a host other than the project repo', async () => {
    const env = { SVC_REPO_URL: 'https://git.example.com/r.git', SVC_TOKEN: 'x' };
    expect(await helper('store', 'protocol=https\nhost=git.example.com\n', env)).to.equal('');
    expect(await helper('get', 'protocol=https\nhost=evil.example.com\n', env)).to.equal('');
    expect(await helper('get', 'protocol=http\nhost=git.example.com\n', env)).to.equal('');
    expect(await helper('get', 'protocol=https\nhost=git.example.com\n', {})).to.equal('');
  });

  it('builds a shell-quoted helper command', () => {
    expect(helperCommand('/usr/bin/node', "/opt/it's/svc-agent.js")).to.equal(`!'/usr/bin/node' '/opt/it'\\''s/svc-agent.js' git-credential`);
  });
});
