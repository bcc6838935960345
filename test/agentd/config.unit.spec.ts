import { expect } from 'chai';
import { readAgentConfigDir, resolveAgentConfigDir } from '../../agentd/agent-config-dir.js';
import { ConfigError, displayRepoUrl, loadConfig } from '../../agentd/config.js';
import { credentialEnv, remoteNeedsCredential } from '../../agentd/credential.js';
import { isSafeRefName } from '../../agentd/git.js';

const TOKEN = 't'.repeat(32);

describe('agentd config', () => {
  it('applies the contract defaults', () => {
    const c = loadConfig({ SVC_TOKEN: TOKEN });
    expect(c.servicePort).to.equal(8000);
    expect(c.runtime).to.deep.equal({ command: 'opencode', port: 4096, home: '/opt/svc/home' });
    expect(c.workspace).to.equal('/workspace');
    expect(c.autoClone).to.equal(false);
  });

  it('reads the injected variables', () => {
    const c = loadConfig({
      SVC_TOKEN: TOKEN,
      SVC_SERVICE_PORT: '9000',
      SVC_PROJECT_AUTO_CLONE: '1',
      SVC_REPO_URL: 'https://git.example.com/r.git',
      SVC_SESSION_ID: 'abc',
      SVC_API_URL: 'https://api.example.com/v1/',
      SVC_BOOTSTRAP_AGENT_SESSION: '1',
    });
    expect(c.servicePort).to.equal(9000);
    expect(c.autoClone).to.equal(true);
    expect(c.branch).to.equal('abc'); // SVC_BRANCH_NAME falls back to the session id
    expect(c.apiUrl).to.equal('https://api.example.com/v1');
    expect(c.bootstrapSession).to.equal(true);
  });

  it('refuses a missing token, a bad port, a clash of ports and a clone without a URL', () => {
    expect(() => loadConfig({})).to.throw(ConfigError, /SVC_TOKEN/);
    expect(() => loadConfig({ SVC_TOKEN: TOKEN, SVC_SERVICE_PORT: '70000' })).to.throw(ConfigError, /SVC_SERVICE_PORT/);
    expect(() => loadConfig({ SVC_TOKEN: TOKEN, SVC_SERVICE_PORT: '5000', SVC_AGENT_PORT: '5000' })).to.throw(ConfigError);
    expect(() => loadConfig({ SVC_TOKEN: TOKEN, SVC_PROJECT_AUTO_CLONE: '1' })).to.throw(ConfigError, /SVC_REPO_URL/);
  });

  it('never shows credentials embedded in a repo URL', () => {
    expect(displayRepoUrl('https://u:secret@git.example.com/r.git')).to.equal('https://git.example.com/r.git');
    expect(displayRepoUrl('git@github.com:o/r.git')).to.equal('git@github.com:o/r.git');
    expect(displayRepoUrl(undefined)).to.equal(null);
  });
});

describe('agentd svc.toml [agent] config_dir', () => {
  it('reads the key from the [agent] table only', () => {
    const toml = [
      'config_dir = "top-level"',
      '[[triggers]]',
      'config_dir = "in-trigger"',
      '[agent] # the agent',
      "config_dir = 'tools/agent' # custom",
      '[env]',
    ].join('\n');
    expect(readAgentConfigDir(toml)).to.equal('tools/agent');
    expect(readAgentConfigDir('[agent]\nconfig_dir = "a\\\\b"')).to.equal('a\\b');
    expect(readAgentConfigDir('[agent]\nname = "x"')).to.equal(undefined);
    expect(readAgentConfigDir('')).to.equal(undefined);
  });

  it('resolves inside the workspace and refuses escapes', () => {
    expect(resolveAgentConfigDir('/workspace', undefined).dir).to.equal('/workspace/.svc/agent');
    expect(resolveAgentConfigDir('/workspace', 'tools/agent').dir).to.equal('/workspace/tools/agent');
    expect(resolveAgentConfigDir('/workspace', '../etc')).to.include({ dir: '/workspace/.svc/agent', fallback: true });
    expect(resolveAgentConfigDir('/workspace', '/etc')).to.include({ dir: '/workspace/.svc/agent', fallback: true });
  });
});

describe('agentd git helpers', () => {
  it('knows which remotes need a fetched credential', () => {
    expect(remoteNeedsCredential('https://git.example.com/r.git')).to.equal(true);
    expect(remoteNeedsCredential('git@github.com:o/r.git')).to.equal(true);
    expect(remoteNeedsCredential('file:///srv/r.git')).to.equal(false);
    expect(remoteNeedsCredential('/srv/r.git')).to.equal(false);
  });

  it('passes the credential through env only, with the helper holding no secret', () => {
    const env = credentialEnv({ username: 'x-token', password: 'p4ss' });
    expect(env.SVC_GIT_PASSWORD).to.equal('p4ss');
    expect(env.GIT_CONFIG_VALUE_1).to.not.include('p4ss');
    expect(env.GIT_CONFIG_VALUE_0).to.equal('');
  });

  it('refuses ref names that could be options or are not refs', () => {
    for (const ok of ['main', 'session-1', 'feature/x', '0b5e2c9a-uuid']) expect(isSafeRefName(ok), ok).to.equal(true);
    for (const bad of ['-x', '--upload-pack=sh', 'a..b', 'a b', 'x.lock', '', 'a~1', 'a:b']) {
      expect(isSafeRefName(bad), bad).to.equal(false);
    }
  });
});
