import { expect } from 'chai';
import { loadConfig } from '../../infra/config.js';
import { silentLogger } from '../../lib/logger.js';
import { createSandboxProviders, loadableProviderNames, type HostProbe } from '../../infra/sandbox/registry.js';

const host = (over: Partial<HostProbe> = {}): HostProbe => ({ env: {}, exists: () => false, which: () => undefined, ...over });

describe('sandbox providers a host can run (stops by the row’s provider, the orphan sweep)', () => {
  it('process always; bwrap when installed; docker when an engine is configured; kubernetes when a cluster is; the current one first, always', () => {
    expect(loadableProviderNames('process', host())).to.deep.equal(['process']);
    expect(loadableProviderNames('bwrap', host())).to.deep.equal(['bwrap', 'process']);
    expect(loadableProviderNames('process', host({ which: (c) => (c === 'bwrap' ? '/usr/bin/bwrap' : undefined), exists: (p) => p === '/var/run/docker.sock' }))).to.deep.equal(['process', 'bwrap', 'docker']);
    expect(loadableProviderNames('docker', host({ env: { KUBECONFIG: '/k' } }))).to.deep.equal(['docker', 'process', 'kubernetes']);
    expect(loadableProviderNames('process', host({ env: { DOCKER_HOST: 'tcp://127.0.0.1:2375', KUBERNETES_SERVICE_HOST: '10.0.0.1' } }))).to.deep.equal(['process', 'docker', 'kubernetes']);
  });

  it('answers the provider a row names when loadable (one instance each), nothing for one this host cannot run', () => {
    const set = createSandboxProviders(loadConfig({ SVC_DATA_DIR: '/srv/svc', SVC_SANDBOX_PROVIDER: 'bwrap' }), { logger: silentLogger }, host());
    expect(set.current.name).to.equal('bwrap');
    expect(set.get('bwrap')).to.equal(set.current);
    expect(set.get('process')?.name).to.equal('process');
    expect(set.get('process')).to.equal(set.get('process'));
    expect(set.get('docker')).to.equal(undefined);
    expect(set.get('kubernetes')).to.equal(undefined);
    expect(set.get('nonsense')).to.equal(undefined);
    expect(set.loadable().map((p) => p.name)).to.deep.equal(['bwrap', 'process']);
  });
});
