import { expect } from 'chai';
import { loadConfig } from '../../infra/config.js';
import { Writable } from 'node:stream';
import { createLogger, silentLogger } from '../../lib/logger.js';
import { createSandboxProvider, defaultProviderName, providerFactories, sandboxesRoot } from '../../infra/sandbox/registry.js';
import { which } from '../../infra/sandbox/provider-util.js';

describe('sandbox provider configuration (the one provider table)', () => {
  it('has defaults for every provider variable and refuses a bad namespace', () => {
    const c = loadConfig({ SVC_DATA_DIR: '/srv/svc' });
    expect(c).to.include({
      SVC_SANDBOX_IMAGE: 'svc-sandbox:local',
      SVC_ALLOW_UNISOLATED: false,
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

  it('defaults to bwrap, never silently to process, and logs the provider it picked (process: as unisolated)', () => {
    expect(defaultProviderName()).to.equal('bwrap');
    const lines: string[] = [];
    const destination = new Writable({ write: (chunk, _e, cb) => (lines.push(String(chunk)), cb()) });
    const logger = createLogger({ level: 'info', pretty: false, destination });
    expect(createSandboxProvider(loadConfig({ SVC_DATA_DIR: '/srv/svc' }), { logger }).name).to.equal('bwrap');
    const picked = lines.map((l) => JSON.parse(l) as { msg: string; provider?: string; chosen?: string; isolated?: boolean }).find((l) => l.provider === 'bwrap')!;
    expect(picked).to.include({ provider: 'bwrap', chosen: 'default', isolated: true });
    if (!which('bwrap')) expect(lines.join('')).to.include('bwrap is not installed');
    lines.length = 0;
    expect(createSandboxProvider(loadConfig({ SVC_DATA_DIR: '/srv/svc', SVC_SANDBOX_PROVIDER: 'process' }), { logger }).name).to.equal('process');
    const proc = JSON.parse(lines[0]!) as { level: number; msg: string; isolated: boolean; chosen: string };
    expect(proc).to.include({ isolated: false, chosen: 'SVC_SANDBOX_PROVIDER', level: 40 });
    expect(proc.msg).to.match(/UNISOLATED/);
  });
});
