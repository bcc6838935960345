#!/usr/bin/env node
/**
 * `svc-entrypoint`: PID 1 of the sandbox image. Starts the daemon as its only child,
 * forwards termination signals to it, and exits with the daemon's exit code (or
 * 128 + signal number), so the sandbox ends when the daemon does.
 *
 * Zombies. PID 1 adopts every orphaned process in the container and must reap it. Node
 * (libuv) only calls waitpid() for processes it spawned itself, and offers neither
 * waitpid(-1) nor prctl(PR_SET_CHILD_SUBREAPER), so an orphan reparented to this
 * process stays a zombie until the container ends. What keeps that from mattering:
 *   - the daemon is the only direct child, and it is reaped by libuv;
 *   - the daemon starts the agent runtime in its own process group and kills the whole
 *     group whenever the runtime exits or is stopped, so tool processes do not outlive
 *     it as orphans;
 *   - zombies are a slot in the process table, not memory or CPU; this process counts
 *     the orphaned zombies it holds (from /proc) and logs a warning when they grow.
 * An image that must reap arbitrary double-forking software should run `tini` (or
 * `docker run --init`) in front of this entrypoint.
 *
 * Forwarders (agentd/forwarder.ts), when the provider gave a network namespace of its own:
 * SVC_GATEWAY_PORT + SVC_GATEWAY_SOCKET expose the server's gateway on the sandbox's
 * loopback (agent sandboxes), SVC_EGRESS_PORT + SVC_EGRESS_SOCKET its egress proxy (agent
 * and app sandboxes: HTTP_PROXY names it); in an app sandbox SVC_DAEMON_SOCKET forwards to
 * the app's PORT. They start before the daemon (its clone goes through the gateway).
 *
 * SVC_ENTRYPOINT_DAEMON overrides the daemon path (a `.js` file runs with this Node);
 * extra arguments after `--` are passed to the daemon.
 */
import { spawn } from 'node:child_process';
import { constants } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { allPids, procStat } from '../lib/proc.js';
import { forward, forwardAll, loopbackForwards } from './forwarder.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const daemonPath = process.env.SVC_ENTRYPOINT_DAEMON || path.join(here, 'svc-agent.js');
const graceMs = Number(process.env.SVC_ENTRYPOINT_GRACE_MS ?? 15_000);
const dashdash = process.argv.indexOf('--');
const daemonArgs = dashdash >= 0 ? process.argv.slice(dashdash + 1) : [];

function log(level: 'info' | 'warn' | 'error', msg: string, extra: Record<string, unknown> = {}): void {
  process.stderr.write(JSON.stringify({ level, time: Date.now(), name: 'svc-entrypoint', msg, ...extra }) + '\n');
}

const viaNode = /\.(c|m)?js$/.test(daemonPath);
// An app sandbox (SVC_APP_COMMAND, `[[apps]]` of svc.toml): the app's command runs in the
// workspace in place of the daemon (no clone, no agent runtime); it ends the sandbox likewise.
const appCommand = process.env.SVC_APP_COMMAND;
await startForwarders().catch((err: Error) => {
  log('error', 'the gateway forwarder could not start', { err: err.message });
  process.exit(126);
});
const child = appCommand
  ? spawn('/bin/sh', ['-c', appCommand], { stdio: 'inherit', env: appEnv(), cwd: process.env.SVC_WORKSPACE || process.cwd() })
  : spawn(viaNode ? process.execPath : daemonPath, viaNode ? [daemonPath, ...daemonArgs] : daemonArgs, {
      stdio: 'inherit',
      env: process.env,
    });

async function startForwarders(): Promise<void> {
  const env = process.env;
  if (appCommand) {
    if (env.SVC_DAEMON_SOCKET && env.PORT) await forward({ path: env.SVC_DAEMON_SOCKET }, { host: '127.0.0.1', port: Number(env.PORT) });
    // An app reaches out through the egress proxy only; the API's gateway is not its.
    await forwardAll(loopbackForwards({ SVC_EGRESS_PORT: env.SVC_EGRESS_PORT, SVC_EGRESS_SOCKET: env.SVC_EGRESS_SOCKET }));
    return;
  }
  await forwardAll(loopbackForwards(env));
}

/** The app's environment: the injected one without the daemon's plumbing. */
function appEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const k of ['SVC_APP_COMMAND', 'SVC_SERVICE_PORT', 'SVC_AGENT_PORT', 'SVC_BIND_HOST', 'SVC_AGENT_HOME', 'SVC_AGENT_RUNTIME', 'SVC_ENTRYPOINT_DAEMON', 'SVC_DAEMON_SOCKET', 'SVC_GATEWAY_SOCKET', 'SVC_GATEWAY_PORT', 'SVC_EGRESS_SOCKET', 'SVC_EGRESS_PORT']) delete env[k];
  return env;
}

child.on('error', (err) => {
  log('error', 'daemon could not be started', { path: daemonPath, err: err.message });
  process.exit(127);
});

let forwarded: NodeJS.Signals | undefined;
for (const sig of ['SIGTERM', 'SIGINT', 'SIGHUP', 'SIGQUIT'] as const) {
  process.on(sig, () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    log('info', 'forwarding signal to daemon', { signal: sig });
    child.kill(sig);
    if (!forwarded) {
      forwarded = sig;
      // A daemon that ignores the signal is killed after the grace period.
      setTimeout(() => child.kill('SIGKILL'), graceMs).unref();
    }
  });
}

child.on('exit', (code, signal) => {
  const status = code ?? 128 + (signal ? (constants.signals[signal] ?? 1) : 1);
  log(code === 0 ? 'info' : 'warn', 'daemon exited', { code, signal, exit: status });
  process.exit(status);
});

/** Orphaned zombies adopted by this process (state Z, parent = us). Linux only. */
async function countAdoptedZombies(): Promise<number> {
  return allPids().filter((pid) => {
    const st = pid !== child.pid ? procStat(pid) : undefined;
    return st?.state === 'Z' && st.ppid === process.pid;
  }).length;
}

let warnedAt = 0;
setInterval(() => {
  void countAdoptedZombies().then((n) => {
    if (n >= 16 && n >= warnedAt * 2) {
      warnedAt = n;
      log('warn', 'orphaned zombie processes are accumulating; Node cannot reap them (see svc-entrypoint.ts)', { zombies: n });
    }
  });
}, 60_000).unref();
