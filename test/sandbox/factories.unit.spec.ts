import { expect } from 'chai';
import { loadConfig } from '../../infra/config.js';
import { bwrapRoot, defaultSandboxProviderName, providerFactories } from '../../infra/sandbox/factories.js';
import { which } from '../../infra/sandbox/provider-util.js';

describe('sandbox provider configuration (bwrap, docker, kubernetes)', () => {
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
    expect(providerFactories.bwrap(c, {}).name).to.equal('bwrap');
    expect(providerFactories.docker(c, {}).name).to.equal('docker');
    expect(providerFactories.kubernetes(c, {}).name).to.equal('kubernetes');
    expect(bwrapRoot(c)).to.equal('/srv/svc/sandboxes');
  });

  it('defaults to bwrap where the binary is installed, else process', () => {
    expect(defaultSandboxProviderName()).to.equal(which('bwrap') ? 'bwrap' : 'process');
  });
});
