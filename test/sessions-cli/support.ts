import path from 'node:path';
import { distRoot } from '../agentd/support/harness.js';

/** The scripted opencode-like runtime (chat-runtime.ts) sandboxes run in these tests. */
export const chatRuntime = path.join(distRoot, 'test', 'sessions-cli', 'chat-runtime.js');
