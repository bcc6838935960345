import { spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import { createInterface } from 'node:readline';
import type { Logger } from '../lib/logger.js';
import { exponential } from '../lib/backoff.js';

export type AgentState = 'starting' | 'running' | 'exited';

export interface RuntimeSpec {
  /** Executable, or a `.js` file run with this Node (handy for scripted runtimes). */
  command: string;
  args: string[];
  port: number;
  cwd: string;
  /** Read at every (re)start, so environment changes apply to the next process. */
  env: () => NodeJS.ProcessEnv;
}

export interface SupervisorOptions {
  spec: RuntimeSpec;
  logger: Logger;
  backoffMs: number;
  backoffMaxMs: number;
  stopGraceMs: number;
  probeIntervalMs?: number;
}

/**
 * Runs the agent runtime and keeps it running.
 *
 * starting (spawned, port not answering yet) -> running (its HTTP port answered) ->
 * exited (died; restarted after a backoff that doubles per consecutive failure and
 * resets once a run lasted a minute). The runtime gets its own process group so that a
 * stop or a forced abort also takes the tool processes it spawned, and so orphans do
 * not pile up under PID 1 (see svc-entrypoint.ts).
 */
export class RuntimeSupervisor {
  private child: ChildProcess | undefined;
  private generation = 0;
  private failures = 0;
  private stopped = true;
  private restartTimer: NodeJS.Timeout | undefined;
  private queue: Promise<unknown> = Promise.resolve();
  private currentState: AgentState = 'starting';
  private readonly waiters = new Set<() => void>();

  constructor(private readonly opts: SupervisorOptions) {}

  get state(): AgentState {
    return this.currentState;
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** Begins supervising. Safe to call once; later calls are no-ops while running. */
  start(): Promise<void> {
    return this.serial(async () => {
      if (!this.stopped) return;
      this.stopped = false;
      this.failures = 0;
      this.spawnChild();
    });
  }

  /** Stops the current process (TERM, then KILL after the grace period) and starts a new one. */
  restart(opts: { force?: boolean } = {}): Promise<void> {
    return this.serial(async () => {
      // Booting from now on: the proxy answers 503 while the old process stops, not a 502
      // from a runtime that is going away (a secrets push or /svc/env restarts it in place).
      this.setState('starting');
      await this.stopChild(opts.force === true);
      this.stopped = false;
      this.failures = 0;
      this.spawnChild();
    });
  }

  /** Stops for good (daemon shutdown). */
  stop(opts: { force?: boolean } = {}): Promise<void> {
    return this.serial(async () => {
      this.stopped = true;
      await this.stopChild(opts.force === true);
      this.setState('exited');
    });
  }

  /** Last-resort synchronous cleanup for process exit. */
  killNow(): void {
    this.stopped = true;
    if (this.child?.pid) killGroup(this.child.pid, 'SIGKILL');
  }

  /** Resolves true once running, false after `timeoutMs`. */
  waitUntilRunning(timeoutMs: number): Promise<boolean> {
    if (this.currentState === 'running') return Promise.resolve(true);
    return new Promise((resolve) => {
      const done = (ok: boolean) => {
        clearTimeout(timer);
        this.waiters.delete(onChange);
        resolve(ok);
      };
      const onChange = () => {
        if (this.currentState === 'running') done(true);
      };
      const timer = setTimeout(() => done(false), timeoutMs);
      this.waiters.add(onChange);
    });
  }

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.queue.then(fn, fn);
    this.queue = next.catch(() => undefined);
    return next;
  }

  private setState(s: AgentState): void {
    if (this.currentState === s) return;
    this.currentState = s;
    this.opts.logger.info({ agent: s }, 'agent runtime state');
    for (const w of [...this.waiters]) w();
  }

  private spawnChild(): void {
    clearTimeout(this.restartTimer);
    const { spec, logger } = this.opts;
    const gen = ++this.generation;
    const viaNode = /\.(c|m)?js$/.test(spec.command);
    const file = viaNode ? process.execPath : spec.command;
    const args = viaNode ? [spec.command, ...spec.args] : spec.args;
    this.setState('starting');
    const startedAt = Date.now();
    let child: ChildProcess;
    try {
      child = spawn(file, args, { cwd: spec.cwd, env: spec.env(), stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    } catch (err) {
      logger.error({ err }, 'agent runtime could not be spawned');
      this.onExit(gen, startedAt, null, null);
      return;
    }
    this.child = child;
    logger.info({ pid: child.pid, command: spec.command, args: spec.args }, 'agent runtime spawned');
    for (const [stream, level] of [
      [child.stdout, 'info'],
      [child.stderr, 'warn'],
    ] as const) {
      if (!stream) continue;
      createInterface({ input: stream, crlfDelay: Infinity }).on('line', (line) =>
        logger[level]({ runtime: level === 'info' ? 'stdout' : 'stderr' }, line),
      );
    }
    let ended = false;
    const end = (code: number | null, signal: NodeJS.Signals | null) => {
      if (ended) return;
      ended = true;
      this.onExit(gen, startedAt, code, signal);
    };
    child.on('error', (err) => {
      logger.error({ err: err.message }, 'agent runtime process error');
      // A spawn failure (ENOENT, EACCES) emits no 'exit'.
      if (child.pid === undefined) end(null, null);
    });
    // 'exit', not 'close': a tool process holding the pipes open must not delay a restart.
    child.on('exit', (code, signal) => end(code, signal));
    void this.probe(gen);
  }

  private onExit(gen: number, startedAt: number, code: number | null, signal: NodeJS.Signals | null): void {
    if (gen !== this.generation) return;
    const pid = this.child?.pid;
    this.child = undefined;
    // The group may outlive its leader (tool processes); take it down with it.
    if (pid) killGroup(pid, 'SIGKILL');
    this.setState('exited');
    if (this.stopped) return;
    if (Date.now() - startedAt > 60_000) this.failures = 0;
    const delay = exponential(this.opts.backoffMs, this.failures, this.opts.backoffMaxMs);
    this.failures++;
    this.opts.logger.warn({ code, signal, restart_in_ms: delay }, 'agent runtime exited; restarting');
    this.restartTimer = setTimeout(() => {
      void this.serial(async () => {
        if (!this.stopped && gen === this.generation) this.spawnChild();
      });
    }, delay);
  }

  private async probe(gen: number): Promise<void> {
    const interval = this.opts.probeIntervalMs ?? 100;
    while (gen === this.generation && this.child && this.currentState === 'starting') {
      if (await answers(this.opts.spec.port)) {
        if (gen === this.generation && this.child) {
          this.setState('running');
        }
        return;
      }
      await new Promise((r) => setTimeout(r, interval));
    }
  }

  private async stopChild(force: boolean): Promise<void> {
    clearTimeout(this.restartTimer);
    const child = this.child;
    this.generation++; // the old process's exit no longer schedules a restart
    this.child = undefined;
    if (!child?.pid || child.exitCode !== null || child.signalCode !== null) {
      if (child?.pid) killGroup(child.pid, 'SIGKILL');
      return;
    }
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    killGroup(child.pid, force ? 'SIGKILL' : 'SIGTERM');
    const inTime = await Promise.race([exited.then(() => true), sleep(force ? 5_000 : this.opts.stopGraceMs).then(() => false)]);
    killGroup(child.pid, 'SIGKILL');
    if (!inTime) await Promise.race([exited, sleep(5_000)]);
    this.setState('exited');
  }
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

function killGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // ESRCH: the group is already gone.
  }
}

/** Whether anything answers HTTP on 127.0.0.1:port (any status counts). */
function answers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const req = http.get({ host: '127.0.0.1', port, path: '/global/health', timeout: 1_000, agent: false }, (res) => {
      res.resume();
      resolve(true);
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(false));
  });
}
