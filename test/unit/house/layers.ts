import { existsSync, readdirSync } from 'node:fs';
import { builtinModules } from 'node:module';
import path from 'node:path';
import { projectRoot } from '../../../lib/paths.js';

/**
 * The house's arrows (shared/design/architecture.md), as data the layering spec checks
 * the source tree against. A file may import its own top-level folder and the folders its
 * layer lists; nothing else of the project.
 *
 *   api, workers, ops -> services -> projections -> infra -> sql -> domain; lib under everything.
 *   cli and agentd: only domain, lib and contracts (they talk to the server over HTTP).
 */
export const LAYERS: Record<string, readonly string[]> = {
  lib: [],
  domain: ['lib'],
  contracts: ['domain', 'lib'],
  sql: ['domain', 'lib'],
  infra: ['sql', 'domain', 'lib'],
  projections: ['infra', 'sql', 'domain', 'lib'],
  services: ['projections', 'infra', 'sql', 'domain', 'lib', 'contracts'],
  // api reaches SQL only through services, and never a job handler.
  api: ['services', 'projections', 'infra', 'domain', 'lib', 'contracts'],
  workers: ['services', 'projections', 'infra', 'domain', 'lib', 'contracts'],
  ops: ['api', 'workers', 'services', 'projections', 'infra', 'sql', 'domain', 'lib', 'contracts'],
  // docs/development.md: bench/ -> anything but test/ (the daemon's own preparation included).
  bench: ['ops', 'api', 'workers', 'services', 'projections', 'infra', 'sql', 'domain', 'lib', 'contracts', 'agentd', 'cli'],
  cli: ['domain', 'lib', 'contracts'],
  agentd: ['domain', 'lib', 'contracts'],
};

/** Packages a folder may import beyond node builtins; folders not listed may import any dependency. */
export const PACKAGES: Record<string, readonly string[]> = {
  // domain is pure: zod for event shapes; smol-toml is a pure TOML parser (string in, value out).
  domain: ['zod', 'smol-toml'],
  lib: ['pino', 'pino-pretty'],
  contracts: ['zod'],
};

/** Every module specifier of a TypeScript source: static and type imports, re-exports, side-effect and dynamic imports. */
export function specifiersOf(source: string): string[] {
  const out: string[] = [];
  const patterns = [
    /^\s*(?:import|export)\s[^'"`;]*?\sfrom\s*['"]([^'"]+)['"]/gms,
    /^\s*import\s*['"]([^'"]+)['"]/gm,
    /\bimport\s*\(\s*['"]([^'"]+)['"]\s*\)/g,
  ];
  for (const re of patterns) for (const m of source.matchAll(re)) out.push(m[1]!);
  return out;
}

/** A relative specifier as a path from the project root (`../../sql/queries/x.js` -> `sql/queries/x.js`); null for a package. */
export function resolved(file: string, spec: string): string | null {
  if (!spec.startsWith('.')) return null;
  return path.posix.normalize(path.posix.join(path.posix.dirname(file), spec));
}

const builtins = new Set(builtinModules);
const isBuiltin = (spec: string) => spec.startsWith('node:') || builtins.has(spec) || builtins.has(spec.split('/')[0]!);
export const packageOf = (spec: string) => (spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]!);
export const topOf = (file: string) => file.split('/')[0]!;

/** The imports of one file that break its layer's arrows (`<specifier>`), empty when it keeps them. */
export function violations(file: string, source: string): string[] {
  const layer = topOf(file);
  const allowed = LAYERS[layer];
  if (!allowed) return []; // test/ and tooling import anything
  const packages = PACKAGES[layer];
  return specifiersOf(source).filter((spec) => {
    const target = resolved(file, spec);
    if (target === null) return !isBuiltin(spec) && packages !== undefined && !packages.includes(packageOf(spec));
    const to = topOf(target);
    return to !== layer && !allowed.includes(to);
  });
}

/** Every TypeScript source under `dir` (relative to the checkout), sorted: what the house specs read. */
export function tsFilesUnder(dir: string): string[] {
  const abs = path.join(projectRoot, dir);
  if (!existsSync(abs)) return [];
  return readdirSync(abs, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && e.name.endsWith('.ts') && !e.name.endsWith('.d.ts'))
    .map((e) => path.relative(projectRoot, path.join(e.parentPath, e.name)).split(path.sep).join('/'))
    .sort();
}
