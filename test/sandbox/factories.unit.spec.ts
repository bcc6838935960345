import { expect } from 'chai';
import { loadConfig } from '../../infra/config.js';
import { silentLogger } from '../../lib/logger.js';
import { createSandboxProvider, defaultProviderName, providerFactories, sandboxesRoot } from '../../infra/sandbox/registry.js';
import { which } from '../../infra/sandbox/provider-util.js';

describe('sandbox provider configuration (the one provider table)', () => {
  it('has defaults for every provider variable and refuses a bad namespace', () => {
    const c = loadConfig({ SVC_DATA_DIR: '/srv/svc' });
    expect(c).to.include({
      SVC_SANDBOX_IMAGE: 'svc-sandbox:local',
      SVC_DOCKER_NETWORK: 'host',
      SVC_K8S_NAMESPACE: 'svc-sandboxes',
      SVC_K8S_CLUSTER_DOMAIN: 'cluster.local',
      SVC_K8S_IMAGE_PULL_POLICY: 'IfNotPresent',
    });
    expect(() => loadConfig({ SVC_K8S_NAMESPACE: 'Not_A_Namespace' })).to.throw(/SVC_K8S_NAMESPACE: must be a Kubernetes namespace name/);
    expect(() => loadConfig({ SVC_K8S_IMAGE_PULL_POLICY: 'Sometimes' })).to.throw(/SVC_K8S_IMAGE_PULL_POLICY/);
  });

  it('builds each provider from the configuration without contacting anything', () => {
    const c = loadConfig({ SVC_DATA_DIR: '/srv/svc', SVC_K8S_NAMESPACE: 'sandboxes' });
    const deps = { logger: silentLogger };
    for (const name of ['process', 'bwrap', 'docker', 'kubernetes'] as const) {
      expect(providerFactories[name](c, deps).name).to.equal(name);
      expect(createSandboxProvider({ ...c, SVC_SANDBOX_PROVIDER: name }, deps).name).to.equal(name);
    }
    expect(sandboxesRoot(c)).to.equal('/srv/svc/sandboxes');
  });

  it('defaults to bwrap where the binary is installed, else process', () => {
    const expected = which('bwrap') ? 'bwrap' : 'process';
    expect(defaultProviderName()).to.equal(expected);
    expect(createSandboxProvider(loadConfig({ SVC_DATA_DIR: '/srv/svc' }), { logger: silentLogger }).name).to.equal(expected);
  });
});
