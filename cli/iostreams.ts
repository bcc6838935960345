/**
 * Where a command reads and writes, and what kind of terminal that is (gh's iostreams).
 * Commands never touch `process.stdout` directly, so tests hand them buffers with the TTY
 * flags they want.
 */
import type { Env } from './factory.js';

export interface Output {
  write(chunk: string): unknown;
}

export interface IOStreams {
  in: NodeJS.ReadableStream;
  out: Output;
  err: Output;
  stdinIsTTY: boolean;
  stdoutIsTTY: boolean;
  stderrIsTTY: boolean;
  /** Terminal width for tables, when stdout is a terminal. */
  columns?: number;
  /**
   * Runs `fn` with `out` piped through the user's pager when stdout is a TTY and a pager
   * is configured; otherwise writes straight to `out`.
   */
  withPager?(env: Env, fn: (out: Output) => void): Promise<void>;
}

/** gh's rules: NO_COLOR wins, then CLICOLOR_FORCE, then CLICOLOR=0, then "is stdout a TTY". */
export function colorEnabled(io: IOStreams, env: Env): boolean {
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== '') return false;
  if (env.CLICOLOR_FORCE !== undefined && env.CLICOLOR_FORCE !== '' && env.CLICOLOR_FORCE !== '0') return true;
  if (env.CLICOLOR === '0') return false;
  return io.stdoutIsTTY;
}

/** `SVC_PAGER`, then `PAGER`, then `less`; an empty value or `cat` means no pager. */
export function pagerCommand(env: Env): string | undefined {
  const p = env.SVC_PAGER ?? env.PAGER ?? 'less';
  const trimmed = p.trim();
  return trimmed === '' || trimmed === 'cat' ? undefined : trimmed;
}

export function systemIO(): IOStreams {
  const io: IOStreams = {
    in: process.stdin,
    out: process.stdout,
    err: process.stderr,
    stdinIsTTY: !!process.stdin.isTTY,
    stdoutIsTTY: !!process.stdout.isTTY,
    stderrIsTTY: !!process.stderr.isTTY,
    ...(process.stdout.columns ? { columns: process.stdout.columns } : {}),
    async withPager(env, fn) {
      const cmd = io.stdoutIsTTY ? pagerCommand(env) : undefined;
      if (!cmd) return fn(io.out);
      const { spawn } = await import('node:child_process');
      const [bin, ...args] = cmd.split(/\s+/);
      const child = spawn(bin!, args, {
        stdio: ['pipe', 'inherit', 'inherit'],
        env: { ...process.env, LESS: process.env.LESS ?? 'FRX', LV: process.env.LV ?? '-c' },
      });
      const started = await new Promise<boolean>((resolve) => {
        child.once('spawn', () => resolve(true));
        child.once('error', () => resolve(false));
      });
      if (!started) return fn(io.out);
      // The user quitting the pager early closes the pipe: not an error.
      child.stdin.on('error', () => {});
      fn({ write: (s: string) => child.stdin.write(s) });
      child.stdin.end();
      await new Promise<void>((resolve) => child.once('close', () => resolve()));
    },
  };
  return io;
}
