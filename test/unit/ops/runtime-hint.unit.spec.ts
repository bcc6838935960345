import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { runtimeInstallHint } from '../../../infra/sandbox/registry.js';
import { appRoot } from '../../../infra/sandbox/provider-util.js';

describe('the agent runtime check at start (opencode-ai is optional)', () => {
  let empty: string;
  before(() => {
    empty = mkdtempSync(path.join(os.tmpdir(), 'svc-no-runtime-'));
  });
  after(() => rmSync(empty, { recursive: true, force: true }));

  it('an install without opencode and without SVC_AGENT_RUNTIME is told how to install it', () => {
    const hint = runtimeInstallHint({ SVC_AGENT_RUNTIME: undefined }, 'bwrap', empty);
    expect(hint).to.include("npm install opencode-ai").and.include('SVC_AGENT_RUNTIME');
  });

  it('says nothing when the runtime is installed, named, or lives in the image', () => {
    expect(runtimeInstallHint({ SVC_AGENT_RUNTIME: undefined }, 'process', appRoot)).to.equal(undefined);
    expect(runtimeInstallHint({ SVC_AGENT_RUNTIME: '/opt/rt' }, 'bwrap', empty)).to.equal(undefined);
    expect(runtimeInstallHint({ SVC_AGENT_RUNTIME: undefined }, 'docker', empty)).to.equal(undefined);
  });
});
