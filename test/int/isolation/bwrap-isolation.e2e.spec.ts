import { probeBwrap } from '../../../infra/sandbox/bwrap.js';
import { execRuntimeBin } from '../../sandbox/support/daemon-client.js';
import { isolationSuite } from './isolation-suite.js';

// bwrap binds the application (dist included) read-only: the exec runtime runs from it.
isolationSuite('bwrap', async () => {
  const probe = probeBwrap();
  return probe.ok ? { env: { SVC_AGENT_RUNTIME: execRuntimeBin } } : { skip: `bubblewrap cannot run here: ${probe.reason}` };
});
