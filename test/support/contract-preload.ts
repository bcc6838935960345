/**
 * Loaded with `node --import` into a `svc-server` that `spawnTestServer` starts: every HTTP
 * server of that process is watched like the in-process one (response-contract.ts), and its
 * problems go, one JSON line each, to `SVC_TEST_CONTRACT_LOG`, which the test process reads
 * in its afterEach hook.
 */
import { appendFileSync } from 'node:fs';
import http from 'node:http';
import { sendViolationsTo, watchResponses } from './response-contract.js';

const file = process.env.SVC_TEST_CONTRACT_LOG;
if (file) {
  sendViolationsTo((problem, body) => appendFileSync(file, `${JSON.stringify({ problem, body })}\n`));
  const listen = http.Server.prototype.listen;
  http.Server.prototype.listen = function (this: http.Server, ...args: unknown[]) {
    watchResponses(this);
    return (listen as (...a: unknown[]) => http.Server).apply(this, args);
  } as typeof listen;
}
