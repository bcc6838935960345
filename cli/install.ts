/**
 * How this CLI was installed, for `svc update` and `svc uninstall`:
 * - `install.sh`: `$SVC_HOME/install.json` (written by ops/install.sh) names the npm prefix,
 *   the package spec and the `/usr/local/bin` shim it created, if any.
 * - `npm`: the package sits in npm's global root (`npm install -g`).
 * - `source`: a checkout run in place (neither of the above).
 */
import { spawn } from 'node:child_process';
import { lstat, readFile, readlink, realpath } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Env, Factory } from './factory.js';

/** The CLI's package root (dist/cli/install.js -> ../..). */
export const cliRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

export interface ScriptInstall {
  method: 'install.sh';
  package: string;
  prefix: string;
  bin: string;
  shim: string | null;
}

export type Install =
  | (ScriptInstall & { home: string; script: string | null })
  | { method: 'npm'; home: string; packageName: string; globalRoot: string }
  | { method: 'source'; home: string; root: string };

export const svcHome = (env: Env): string => env.SVC_HOME || path.join(env.HOME || os.homedir(), '.svc');

async function exists(p: string): Promise<boolean> {
  return lstat(p).then(
    () => true,
    () => false,
  );
}

async function packageName(root: string): Promise<string> {
  try {
    return (JSON.parse(await readFile(path.join(root, 'package.json'), 'utf8')) as { name?: string }).name ?? 'svc';
  } catch {
    return 'svc';
  }
}

export async function detectInstall(f: Factory): Promise<Install> {
  const home = svcHome(f.env);
  try {
    const rec = JSON.parse(await readFile(path.join(home, 'install.json'), 'utf8')) as Partial<ScriptInstall>;
    if (rec.method === 'install.sh' && rec.prefix && rec.package) {
      const script = path.join(home, 'install.sh');
      return {
        method: 'install.sh',
        home,
        package: rec.package,
        prefix: rec.prefix,
        bin: rec.bin ?? path.join(rec.prefix, 'bin', 'svc'),
        shim: rec.shim ?? null,
        script: (await exists(script)) ? script : null,
      };
    }
  } catch {
    /* not installed by the script */
  }
  const out = await runCapture(f, 'npm', ['root', '--global']).catch(() => null);
  const globalRoot = out?.code === 0 ? out.stdout.trim() : '';
  if (globalRoot) {
    const real = await realpath(cliRoot).catch(() => cliRoot);
    const rootReal = await realpath(globalRoot).catch(() => globalRoot);
    if (path.dirname(real) === rootReal || path.dirname(cliRoot) === globalRoot) {
      return { method: 'npm', home, packageName: await packageName(cliRoot), globalRoot };
    }
  }
  return { method: 'source', home, root: cliRoot };
}

/** A registry spec (`name`, `name@1.2`, `@scope/name@tag`) is updated to `@latest`; a tarball, path or git URL is re-installed as-is. */
export function latestSpec(spec: string): string {
  const m = /^(@[a-z0-9._~-]+\/)?[a-z0-9._~-]+(@[^/\s]*)?$/i.exec(spec);
  if (!m) return spec;
  const at = spec.lastIndexOf('@');
  const name = at > 0 ? spec.slice(0, at) : spec;
  return `${name}@latest`;
}

/** True when `shim` is a symlink to something under `prefix` (so it is ours to remove). */
export async function ownsShim(shim: string, prefix: string): Promise<boolean> {
  const target = await readlink(shim).catch(() => null);
  return !!target && path.resolve(path.dirname(shim), target).startsWith(prefix + path.sep);
}

export function runCapture(f: Factory, cmd: string, args: string[], extraEnv: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { env: { ...(f.env as Record<string, string>), ...extraEnv }, cwd: f.cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? 1, stdout, stderr }));
  });
}

/** Runs a command with its output passed through to the CLI's own streams (stdout to stderr unless `toStdout`). */
export function runThrough(f: Factory, cmd: string, args: string[], extraEnv: Record<string, string> = {}, toStdout = false): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { env: { ...(f.env as Record<string, string>), ...extraEnv }, cwd: f.cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.on('data', (c: Buffer) => (toStdout ? f.io.out : f.io.err).write(c.toString()));
    child.stderr.on('data', (c: Buffer) => f.io.err.write(c.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve(code ?? 1));
  });
}

/** `KEY=v cmd args`, quoted for a shell, for printing. */
export function shellLine(cmd: string, args: string[], env: Record<string, string> = {}): string {
  const q = (s: string) => (/^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`);
  return [...Object.entries(env).map(([k, v]) => `${k}=${q(v)}`), q(cmd), ...args.map(q)].join(' ');
}
