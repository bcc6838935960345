import { spawnChild } from './spawn.js';


/**
 * A git process that ended with an exit code the caller did not expect. Carries the
 * evidence (argv, exit code, stderr) with credentials already removed, so it can be
 * logged as is. Callers branch on `exitCode`, never on `stderr`.
 */
export class GitCommandError extends Error {
  readonly exitCode: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly args: readonly string[];
  readonly stderr: string;
  /** Set when git never ran because the system refused the spawn (EMFILE, ENOMEM, EAGAIN …). */
  readonly systemCode?: string;

  constructor(args: readonly string[], exitCode: number | null, signal: NodeJS.Signals | null, stderr: string, systemCode?: string) {
    const what = signal ? `signal ${signal}` : `exit code ${exitCode}`;
    const firstLine = stderr.trim().split('\n')[0] ?? '';
    super(`git ${args[0] ?? ''} failed with ${what}${firstLine ? `: ${firstLine}` : ''}`);
    this.name = 'GitCommandError';
    this.exitCode = exitCode;
    this.signal = signal;
    this.args = args;
    this.stderr = stderr;
    if (systemCode) this.systemCode = systemCode;
  }
}

export const isGitCommandError = (e: unknown): e is GitCommandError => e instanceof GitCommandError;

/**
 * The one place that starts git. Arguments are always an array (no shell), the
 * environment is built from scratch so the host's git config, prompts, locale and any
 * GIT_DIR-style variables of the parent cannot change an outcome, no hook or
 * command-running setting of a repository runs (HARDENED_CONFIG), and results are read
 * from the exit code and stdout bytes only.
 */
export interface GitRunOptions {
  /** Working directory; for a bare repository pass its path (git finds it by cwd). */
  cwd?: string;
  /** Extra environment for this call (identity, credentials for a helper). */
  env?: Record<string, string>;
  /** Bytes for stdin. */
  input?: string | Buffer;
  /** Exit codes that are outcomes rather than failures. Default [0]. */
  okCodes?: readonly number[];
  /** Kill git after this many ms (then it fails with signal SIGKILL). */
  timeoutMs?: number;
  /** Values removed from argv and stderr before they can reach an error or a log. */
  secrets?: readonly string[];
  /**
   * Stop reading stdout past this many bytes: git is killed and the call resolves with
   * what was read and `truncated: true` (bounded memory for outputs like a huge patch).
   */
  maxStdoutBytes?: number;
}

export interface GitResult {
  code: number;
  stdout: Buffer;
  stderr: string;
  /** Set when `maxStdoutBytes` cut the output. */
  truncated?: boolean;
}

/** Variables taken from the parent: enough to find git and ssh, nothing that steers git. */
const INHERITED = ['PATH', 'HOME', 'TMPDIR', 'SSH_AUTH_SOCK', 'GIT_SSH_COMMAND', 'GIT_EXEC_PATH'] as const;

/**
 * Configuration every git started here runs with, at command scope (it wins over a
 * repository's own config file; a caller's later `-c` wins over it): git runs nothing a
 * repository carries. Hooks are off (`core.hooksPath=/dev/null`: the managed repository's
 * pre-receive is the one hook, given by the caller on the command line), and each key that
 * names a command to run is set to nothing or to a harmless constant. Drivers keyed by a
 * name of the repository's choosing (`filter.<x>.*`, `merge.<x>.driver`,
 * `diff.<x>.textconv`) cannot be listed here: the server only ever runs git on
 * repositories whose config file is its own (managed repositories, mirrors, and the view
 * of a `file://` repository: infra/git/local-view.ts), and diffs run with
 * `--no-ext-diff --no-textconv`. git >= 2.31 reads these variables.
 */
export const HARDENED_CONFIG: ReadonlyArray<readonly [string, string]> = [
  ['core.hooksPath', '/dev/null'],
  ['core.fsmonitor', 'false'],
  ['core.sshCommand', 'ssh'],
  ['core.pager', 'cat'],
  ['core.editor', ':'],
  ['core.askPass', ''],
  ['core.attributesFile', '/dev/null'],
  // Empty would make git try to run "" (and complain); `true` lists no alternate refs.
  ['core.alternateRefsCommand', 'true'],
  // An empty value empties the helper list; a caller's helper (a later `-c`) is added after it.
  ['credential.helper', ''],
  ['commit.gpgSign', 'false'],
  ['tag.gpgSign', 'false'],
  ['push.gpgSign', 'false'],
  // Transports: the usual ones; never `ext::` (runs a command) or `fd::`.
  ['protocol.allow', 'never'],
  ['protocol.file.allow', 'always'],
  ['protocol.git.allow', 'always'],
  ['protocol.http.allow', 'always'],
  ['protocol.https.allow', 'always'],
  ['protocol.ssh.allow', 'always'],
  ['protocol.ext.allow', 'never'],
  ['protocol.fd.allow', 'never'],
];

/**
 * `GIT_CONFIG_COUNT`/`KEY_n`/`VALUE_n` for HARDENED_CONFIG followed by the pairs the
 * caller's own variables carry (agentd's credential helper): both stay, ours first.
 */
function configEnv(extra: Record<string, string>): Record<string, string> {
  const pairs: Array<readonly [string, string]> = [...HARDENED_CONFIG];
  const theirs = Number(extra.GIT_CONFIG_COUNT ?? 0);
  for (let i = 0; Number.isInteger(theirs) && i < theirs; i++) {
    const key = extra[`GIT_CONFIG_KEY_${i}`];
    if (key !== undefined) pairs.push([key, extra[`GIT_CONFIG_VALUE_${i}`] ?? '']);
  }
  const env: Record<string, string> = { GIT_CONFIG_COUNT: String(pairs.length) };
  pairs.forEach(([k, v], i) => {
    env[`GIT_CONFIG_KEY_${i}`] = k;
    env[`GIT_CONFIG_VALUE_${i}`] = v;
  });
  return env;
}

const CONFIG_VAR = /^GIT_CONFIG_(COUNT|KEY_\d+|VALUE_\d+)$/;

export function cleanEnv(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const key of INHERITED) {
    const value = process.env[key];
    if (value !== undefined) env[key] = value;
  }
  const rest = Object.fromEntries(Object.entries(extra).filter(([k]) => !CONFIG_VAR.test(k)));
  return {
    ...env,
    LC_ALL: 'C',
    LANG: 'C',
    GIT_TERMINAL_PROMPT: '0',
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_ATTR_NOSYSTEM: '1',
    GIT_ASKPASS: '',
    SSH_ASKPASS: '',
    GIT_NO_REPLACE_OBJECTS: '1',
    GIT_OPTIONAL_LOCKS: '0',
    GIT_PROTOCOL_FROM_USER: '0',
    ...rest,
    ...configEnv(extra),
  };
}

const URL_USERINFO = /([a-z][a-z0-9+.-]*:\/\/)[^/@\s]+@/gi;

export function redact(text: string, secrets: readonly string[] = []): string {
  let out = text.replace(URL_USERINFO, '$1[redacted]@');
  for (const s of secrets) {
    if (s.length > 0) out = out.split(s).join('[redacted]');
  }
  return out;
}

export function runGit(args: readonly string[], opts: GitRunOptions = {}): Promise<GitResult> {
  const okCodes = opts.okCodes ?? [0];
  return new Promise((resolve, reject) => {
    let timer: NodeJS.Timeout | undefined;
    // The error listener is the first thing the child gets: a spawn the system refuses
    // (EMFILE, ENOMEM, EAGAIN) fails this one call, nothing else.
    const child = spawnChild(
      'git',
      'git',
      args,
      {
        cwd: opts.cwd,
        env: cleanEnv(opts.env),
        stdio: ['pipe', 'pipe', 'pipe'],
        shell: false,
        windowsHide: true,
        // With a budget git runs in a process group of its own, so the timeout kills its
        // transport helper too (git-remote-http holds the pipes open: killing git alone left
        // the call waiting on a silent host forever).
        detached: opts.timeoutMs !== undefined,
      },
      (e) => {
        if (timer) clearTimeout(timer);
        reject(new GitCommandError(redactArgs(args, opts.secrets), null, null, redact(String(e.message), opts.secrets), e.code));
      },
    );
    if (!child.stdout || !child.stderr || !child.stdin) return; // never started: the listener rejects
    const { stdout, stderr: errStream, stdin } = child;
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    if (opts.timeoutMs) timer = setTimeout(() => processGroup.kill(child), opts.timeoutMs);
    let outBytes = 0;
    let cut = false;
    stdout.on('data', (b: Buffer) => {
      if (cut) return;
      if (opts.maxStdoutBytes !== undefined && outBytes + b.length > opts.maxStdoutBytes) {
        out.push(b.subarray(0, opts.maxStdoutBytes - outBytes));
        outBytes = opts.maxStdoutBytes;
        cut = true;
        child.kill('SIGKILL');
        return;
      }
      outBytes += b.length;
      out.push(b);
    });
    errStream.on('data', (b: Buffer) => err.push(b));
    // git may exit before reading all of stdin (EPIPE); its exit code tells the outcome.
    stdin.on('error', () => {});
    child.on('close', (code, signal) => {
      if (timer) clearTimeout(timer);
      const stderr = redact(Buffer.concat(err).toString('utf8'), opts.secrets);
      if (cut) {
        resolve({ code: 0, stdout: Buffer.concat(out), stderr, truncated: true });
        return;
      }
      if (code !== null && okCodes.includes(code)) {
        resolve({ code, stdout: Buffer.concat(out), stderr });
      } else {
        reject(new GitCommandError(redactArgs(args, opts.secrets), code, signal, stderr));
      }
    });
    stdin.end(opts.input ?? '');
  });
}

const redactArgs = (args: readonly string[], secrets?: readonly string[]): string[] => args.map((a) => redact(a, secrets));

/** Splits `-z` output into fields; a trailing NUL does not make an empty last field. */
export function splitNul(buf: Buffer): string[] {
  const text = buf.toString('utf8');
  const parts = text.split('\0');
  if (parts.length > 0 && parts[parts.length - 1] === '') parts.pop();
  return parts;
}

const processGroup = {
  /** Kills a child started `detached` with its whole process group (its transport helpers too). */
  kill(child: { pid?: number | undefined; kill(signal: NodeJS.Signals): boolean }): void {
    try {
      if (child.pid) process.kill(-child.pid, 'SIGKILL');
    } catch {
      child.kill('SIGKILL');
    }
  },
};
