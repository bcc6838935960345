#!/usr/bin/env node
/**
 * `svc-agent`: the in-sandbox daemon. Clones the project, runs and supervises the agent
 * runtime, serves the control surface and proxies to the runtime and sandbox ports on
 * SVC_SERVICE_PORT. Reference: docs/agentd.md.
 */
import { createLogger } from '../lib/logger.js';
import { ConfigError, loadConfig } from './config.js';
import { startDaemon, type Daemon } from './daemon.js';
import { runGitCredentialHelper } from './git-credential-helper.js';

async function main(): Promise<void> {
  const logger = createLogger({ name: 'svc-agent', pretty: process.env.SVC_LOG_PRETTY === '1' });
  let config;
  try {
    config = loadConfig(process.env);
  } catch (err) {
    if (err instanceof ConfigError) {
      logger.fatal({ issues: err.issues }, err.message);
      process.stderr.write(`svc-agent: ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }

  let daemon: Daemon | undefined;
  let exiting = false;
  const shutdown = (signal: string) => {
    if (exiting) return;
    exiting = true;
    logger.info({ signal }, 'shutting down');
    const hardStop = setTimeout(() => {
      daemon?.killNow();
      process.exit(1);
    }, config.stopGraceMs + 5_000);
    hardStop.unref();
    void (daemon?.stop() ?? Promise.resolve()).finally(() => {
      logger.flush?.();
      process.exit(0);
    });
  };
  for (const sig of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) process.on(sig, () => shutdown(sig));
  process.on('exit', () => daemon?.killNow());
  process.on('uncaughtException', (err) => {
    // Last line of defence: log and keep serving; one bad request must not take the
    // sandbox's only way in down with it.
    logger.error({ err }, 'uncaught exception');
  });
  process.on('unhandledRejection', (err) => logger.error({ err }, 'unhandled rejection'));

  try {
    daemon = await startDaemon(config, process.env, logger);
  } catch (err) {
    logger.fatal({ err }, 'svc-agent could not start');
    process.exit(1);
  }
}

if (process.argv[2] === 'git-credential') {
  void runGitCredentialHelper(process.argv[3], process.env, process.stdin, process.stdout, process.stderr).then((code) => process.exit(code));
} else {
  void main();
}
