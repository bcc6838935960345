import { appendFile, lstat, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';

/**
 * opencode installs `@opencode-ai/plugin` from npm into every config dir it loads (the
 * global `~/.config/opencode` and OPENCODE_CONFIG_DIR, which is in the workspace) unless
 * the dir already has a `node_modules` and a lock naming its dependencies. In a sandbox
 * that is a download at every boot (or a failing one without network). The daemon marks
 * a config dir that has no dependencies of its own (no `package.json`, no `node_modules`)
 * as installed: an empty `node_modules`, a `package.json` and a lock that name the package,
 * and the `.gitignore` opencode writes there itself (which ignores all of these, itself
 * included: the workspace stays clean). A repo whose config dir declares dependencies
 * (its own plugins) keeps them, and opencode installs them as it would anywhere.
 *
 * What is lost: custom tools in the config dir cannot import `@opencode-ai/plugin`
 * unless the repo declares it. Checked against opencode 1.18 (`Npm.install`: writable dir,
 * `node_modules` present, every package.json dependency in the lock's root package).
 */
const PLUGIN = '@opencode-ai/plugin';
const GITIGNORE = ['node_modules', 'package.json', 'package-lock.json', 'bun.lock', '.gitignore'].join('\n') + '\n';

const exists = (p: string) => lstat(p).then(() => true, () => false);

export async function markRuntimeDepsInstalled(dir: string, workspace?: string): Promise<'marked' | 'kept'> {
  if ((await exists(path.join(dir, 'package.json'))) || (await exists(path.join(dir, 'node_modules')))) return 'kept';
  if (workspace) await excludeInRepo(workspace, dir);
  await mkdir(path.join(dir, 'node_modules'), { recursive: true });
  const deps = { [PLUGIN]: '*' };
  await writeFile(path.join(dir, 'package.json'), JSON.stringify({ private: true, dependencies: deps }, null, 2) + '\n');
  await writeFile(path.join(dir, 'package-lock.json'), JSON.stringify({ lockfileVersion: 3, requires: true, packages: { '': { dependencies: deps } } }, null, 2) + '\n');
  if (!(await exists(path.join(dir, '.gitignore')))) await writeFile(path.join(dir, '.gitignore'), GITIGNORE);
  return 'marked';
}

/**
 * Undoes `markRuntimeDepsInstalled` on a dir it marked (a pool sandbox's config dir, before
 * its claim checks out a branch that may track files there): what it wrote goes.
 */
export async function unmarkRuntimeDeps(dir: string): Promise<void> {
  for (const name of ['node_modules', 'package.json', 'package-lock.json', '.gitignore']) await rm(path.join(dir, name), { recursive: true, force: true });
}

/**
 * The repo's own `.gitignore` in the config dir (if it has one) may not list these files:
 * they are excluded in `.git/info/exclude`, which is never committed, so an agent's
 * `git add -A` cannot take them.
 */
async function excludeInRepo(workspace: string, dir: string): Promise<void> {
  const rel = path.relative(workspace, dir);
  if (rel.startsWith('..') || path.isAbsolute(rel) || !(await exists(path.join(workspace, '.git')))) return;
  const file = path.join(workspace, '.git', 'info', 'exclude');
  const prefix = rel ? `/${rel.split(path.sep).join('/')}/` : '/';
  const lines = ['node_modules', 'package.json', 'package-lock.json', 'bun.lock'].map((n) => prefix + n);
  const have = await readFile(file, 'utf8').catch(() => '');
  const missing = lines.filter((l) => !have.split('\n').includes(l));
  if (!missing.length) return;
  await mkdir(path.dirname(file), { recursive: true });
  await appendFile(file, (have && !have.endsWith('\n') ? '\n' : '') + missing.join('\n') + '\n');
}

/** Only opencode does this: other runtimes get nothing written. */
export const isOpencode = (command: string): boolean => /^opencode(\.exe)?$/.test(path.basename(command));
