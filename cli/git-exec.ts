/**
 * git for CLI commands (init, ship): an argv array (no shell), the user's own environment
 * (their identity and credential helpers), asynchronous. `forward` streams git's stderr
 * (its progress and the server's `remote:` lines) to the command's stderr as it comes.
 */
import { spawn } from 'node:child_process';
import type { Factory } from './factory.js';
import type { Output } from './iostreams.js';

export interface GitOut {
  code: number;
  stdout: string;
  stderr: string;
}

export function gitExec(f: Factory, args: string[], opts: { cwd?: string; forward?: Output } = {}): Promise<GitOut> {
  return new Promise((resolve) => {
    const env: Record<string, string> = {};
    for (const [k, v] of Object.entries(f.env)) if (v !== undefined) env[k] = v;
    const child = spawn('git', args, { cwd: opts.cwd ?? f.cwd, env, stdio: ['ignore', 'pipe', 'pipe'], shell: false });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => {
      stderr += c.toString();
      opts.forward?.write(c.toString());
    });
    child.on('error', (e) => resolve({ code: -1, stdout, stderr: `${stderr}${e.message}\n` }));
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
  });
}

/** A branch name as the CLI passes it to git: plain, never an option or revision syntax. */
export const isPlainBranch = (name: string): boolean =>
  // eslint-disable-next-line no-control-regex
  name.length > 0 && name.length <= 255 && !name.startsWith('-') && !/[\x00-\x20\x7f~^:?*[\\]|\.\.|@\{|\/\/|\/$|^\/|\.lock$|\.$/.test(name);
