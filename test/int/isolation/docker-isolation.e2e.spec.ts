import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DEFAULT_SANDBOX_IMAGE } from '../../../infra/sandbox/docker.js';
import { distRoot } from '../../agentd/support/harness.js';
import { isolationSuite } from './isolation-suite.js';

/**
 * The same suite under docker (`--network none`). The sandboxes run the default image
 * (ops/sandbox-image.sh) plus the test's exec runtime, layered into a local test image
 * here (no network: COPY only).
 */
const TEST_IMAGE = 'svc-sandbox-isolation-test:local';
const RUNTIME_DIR = '/opt/svc/test-runtime';

isolationSuite('docker', async () => {
  if (spawnSync('docker', ['info'], { encoding: 'utf8' }).status !== 0) return { skip: 'no Docker engine here' };
  if (spawnSync('docker', ['image', 'inspect', DEFAULT_SANDBOX_IMAGE], { encoding: 'utf8' }).status !== 0) {
    return { skip: `image ${DEFAULT_SANDBOX_IMAGE} is missing: build it with ops/sandbox-base-image.sh && ops/sandbox-image.sh (CI does)` };
  }
  const ctx = mkdtempSync(path.join(os.tmpdir(), 'svc-iso-image-'));
  try {
    for (const f of ['exec-runtime.js', 'runtime-http.js']) copyFileSync(path.join(distRoot, 'test', 'sandbox', 'support', f), path.join(ctx, f));
    writeFileSync(path.join(ctx, 'package.json'), '{"type":"module"}\n');
    writeFileSync(path.join(ctx, 'Dockerfile'), `FROM ${DEFAULT_SANDBOX_IMAGE}\nCOPY . ${RUNTIME_DIR}/\n`);
    const built = spawnSync('docker', ['build', '-q', '-t', TEST_IMAGE, ctx], { encoding: 'utf8', env: { ...process.env, DOCKER_BUILDKIT: '0' } });
    if (built.status !== 0) throw new Error(`the test image did not build: ${built.stderr}`);
  } finally {
    rmSync(ctx, { recursive: true, force: true });
  }
  return { env: { SVC_SANDBOX_IMAGE: TEST_IMAGE, SVC_AGENT_RUNTIME: `${RUNTIME_DIR}/exec-runtime.js` } };
});
