import { expect } from 'chai';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../../../lib/paths.js';

/**
 * The server starts child processes only through lib/spawn.ts (`spawnChild`), which gives
 * each child its 'error' listener before anything touches it: a spawn the system refuses
 * (EMFILE, ENOMEM, EAGAIN) then fails one operation instead of ending the process. This
 * spec keeps it so: no server source calls the asynchronous `spawn`, `execFile`, `exec` or
 * `fork` of node:child_process itself. The synchronous forms throw or return their error
 * (no emitter) and stay allowed. agentd and cli run elsewhere (in a sandbox, on a laptop).
 */
const SERVER = ['lib', 'domain', 'contracts', 'sql', 'infra', 'projections', 'services', 'api', 'workers', 'ops'];
const ALLOWED = new Set(['lib/spawn.ts']);

function sources(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(path.join(projectRoot, dir))) {
    const rel = path.join(dir, name);
    if (statSync(path.join(projectRoot, rel)).isDirectory()) out.push(...sources(rel));
    else if (rel.endsWith('.ts')) out.push(rel);
  }
  return out;
}

/** The asynchronous child_process functions a source imports by name. */
export function asyncChildImports(source: string): string[] {
  const found: string[] = [];
  for (const m of source.matchAll(/import\s*\{([^}]*)\}\s*from\s*['"](?:node:)?child_process['"]/g)) {
    for (const part of m[1]!.split(',')) {
      const name = part.trim().replace(/^type\s+/, '').split(/\s+as\s+/)[0]!;
      if (['spawn', 'execFile', 'exec', 'fork'].includes(name) && !/^\s*type\s/.test(part)) found.push(name);
    }
  }
  if (/import\s+\*\s+as\s+\w+\s+from\s*['"](?:node:)?child_process['"]/.test(source) || /import\s+\w+\s+from\s*['"](?:node:)?child_process['"]/.test(source)) found.push('child_process');
  return found;
}

describe('house: child processes start through lib/spawn.ts', () => {
  it('no server source imports the asynchronous spawn, execFile, exec or fork', () => {
    const offenders = SERVER.flatMap(sources)
      .filter((f) => !ALLOWED.has(f))
      .map((f) => ({ f, names: asyncChildImports(readFileSync(path.join(projectRoot, f), 'utf8')) }))
      .filter((x) => x.names.length > 0)
      .map((x) => `${x.f}: ${x.names.join(', ')}`);
    expect(offenders).to.deep.equal([]);
  });

  it('the check sees each form it forbids, and lets the synchronous ones and types pass', () => {
    expect(asyncChildImports("import { spawn } from 'node:child_process';")).to.deep.equal(['spawn']);
    expect(asyncChildImports("import { execFile as run, spawnSync } from 'child_process';")).to.deep.equal(['execFile']);
    expect(asyncChildImports("import cp from 'node:child_process';")).to.deep.equal(['child_process']);
    expect(asyncChildImports("import { spawnSync, execFileSync, type ChildProcess } from 'node:child_process';")).to.deep.equal([]);
  });
});
