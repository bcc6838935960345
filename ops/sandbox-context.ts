#!/usr/bin/env node
/**
 * Assembles the docker build context of the default sandbox image (ops/sandbox.Dockerfile)
 * from this checkout, offline: the compiled daemon, entrypoint and CLI (only the files
 * they import), the npm packages they import with their dependency closure, and
 * optionally the opencode runtime. Used by ops/sandbox-image.sh.
 *
 *   node dist/ops/sandbox-context.js <out-dir> [--no-runtime]
 *
 * Layout written: <out>/app/{package.json,dist/...,node_modules/...} (-> /opt/svc/app)
 * and <out>/bin/{svc,svc-agent,svc-entrypoint} symlinks (-> /usr/local/bin).
 */
import { builtinModules } from 'node:module';
import { chmodSync, cpSync, existsSync, mkdirSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const dist = path.join(repo, 'dist');
const APP = '/opt/svc/app';
const ENTRIES = { 'svc-agent': 'agentd/svc-agent.js', 'svc-entrypoint': 'agentd/svc-entrypoint.js', svc: 'cli/main.js' } as const;
const builtins = new Set(builtinModules);

/** Every dist file reachable from the entries by static or dynamic import, and the packages they name. */
export function importGraph(entries: string[]): { files: Set<string>; packages: Set<string> } {
  const files = new Set<string>();
  const packages = new Set<string>();
  const stack = entries.map((e) => path.resolve(e));
  while (stack.length) {
    const f = stack.pop()!;
    if (files.has(f)) continue;
    files.add(f);
    const src = readFileSync(f, 'utf8');
    for (const m of src.matchAll(/(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)['"]([^'"\s]+)['"]/g)) {
      const spec = m[1]!;
      if (spec.startsWith('node:') || builtins.has(spec.split('/')[0]!)) continue;
      if (spec.startsWith('.')) {
        const target = path.resolve(path.dirname(f), spec);
        if (existsSync(target)) stack.push(target);
        continue;
      }
      const name = spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]!;
      if (/^(@[a-z0-9._-]+\/)?[a-z0-9._-]+$/i.test(name)) packages.add(name);
    }
  }
  return { files, packages };
}

/** Package dirs (relative to the repo) of `names` and everything they depend on, resolved the way node does. */
export function dependencyClosure(names: Iterable<string>): Set<string> {
  const out = new Set<string>();
  const resolve = (name: string, fromDir: string): string | undefined => {
    for (let dir = fromDir; ; dir = path.dirname(dir)) {
      const candidate = path.join(dir, 'node_modules', name);
      if (existsSync(path.join(candidate, 'package.json'))) return candidate;
      if (dir === repo || dir === path.dirname(dir)) return undefined;
    }
  };
  const visit = (name: string, fromDir: string, optional: boolean) => {
    const dir = resolve(name, fromDir);
    if (!dir) {
      if (optional) return;
      throw new Error(`package ${name} (needed from ${path.relative(repo, fromDir) || '.'}) is not installed: run npm install`);
    }
    const rel = path.relative(repo, dir);
    if (out.has(rel)) return;
    out.add(rel);
    const pkg = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as {
      dependencies?: Record<string, string>;
      optionalDependencies?: Record<string, string>;
    };
    for (const dep of Object.keys(pkg.dependencies ?? {})) visit(dep, dir, false);
    for (const dep of Object.keys(pkg.optionalDependencies ?? {})) visit(dep, dir, true);
  };
  for (const n of names) visit(n, repo, false);
  return out;
}

function main(): void {
  const args = process.argv.slice(2);
  const out = args.find((a) => !a.startsWith('--'));
  if (!out) {
    process.stderr.write('usage: sandbox-context <out-dir> [--no-runtime]\n');
    process.exit(2);
  }
  const withRuntime = !args.includes('--no-runtime');
  for (const rel of Object.values(ENTRIES)) {
    if (!existsSync(path.join(dist, rel))) throw new Error(`dist/${rel} is missing: run npm run build`);
  }
  rmSync(out, { recursive: true, force: true });
  const app = path.join(out, 'app');
  mkdirSync(app, { recursive: true });

  const { files, packages } = importGraph(Object.values(ENTRIES).map((rel) => path.join(dist, rel)));
  for (const f of files) {
    const to = path.join(app, path.relative(repo, f));
    mkdirSync(path.dirname(to), { recursive: true });
    cpSync(f, to);
  }
  for (const rel of Object.values(ENTRIES)) chmodSync(path.join(app, 'dist', rel), 0o755);

  const pkgs = [...packages];
  for (const rel of dependencyClosure(pkgs)) {
    // dereference: node_modules may be a symlink to a shared install.
    cpSync(realpathSync(path.join(repo, rel)), path.join(app, rel), { recursive: true, dereference: true });
  }
  if (withRuntime) {
    // The runtime package holds the platform binary itself (postinstall); its optional
    // per-platform packages would only duplicate it.
    const rt = path.join(repo, 'node_modules', 'opencode-ai');
    if (!existsSync(path.join(rt, 'bin', 'opencode.exe'))) throw new Error('node_modules/opencode-ai/bin/opencode.exe is missing: run npm install, or pass --no-runtime');
    cpSync(realpathSync(rt), path.join(app, 'node_modules', 'opencode-ai'), { recursive: true, dereference: true });
  }
  const own = JSON.parse(readFileSync(path.join(repo, 'package.json'), 'utf8')) as { name: string; version: string };
  writeFileSync(path.join(app, 'package.json'), JSON.stringify({ name: `${own.name}-sandbox`, version: own.version, private: true, type: 'module' }, null, 2) + '\n');

  mkdirSync(path.join(out, 'bin'), { recursive: true });
  for (const [name, rel] of Object.entries(ENTRIES)) symlinkSync(path.posix.join(APP, 'dist', rel), path.join(out, 'bin', name));
  if (withRuntime) symlinkSync(path.posix.join(APP, 'node_modules', 'opencode-ai', 'bin', 'opencode.exe'), path.join(out, 'bin', 'opencode'));
  process.stdout.write(`sandbox context: ${files.size} dist files, ${pkgs.join(', ')} and their dependencies (runtime: ${withRuntime ? 'opencode' : 'none'}) in ${out}\n`);
}

if (process.argv[1] && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url)) main();
