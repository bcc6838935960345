import { expect } from 'chai';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { inflateSync } from 'node:zlib';
import { writeMergeCommit } from '../../infra/git/commit-object.js';
import { casBranch } from '../../infra/git/ref-cas.js';
import { localRefReader } from '../../infra/git/local-refs.js';
import { SYSTEM_IDENTITY } from '../../infra/git/port.js';
import { cleanEnv } from '../../lib/git-run.js';
import { projectRoot } from '../../lib/paths.js';
import { skipUnlessCi } from '../support/skip.js';

/**
 * The merge path writes its merge commit (infra/git/commit-object.ts) and moves the branch
 * (infra/git/ref-cas.ts) without a git process. Here both are held to git's own
 * `commit-tree` and `update-ref` on twin repositories: the same object id and object
 * content, the same ref file and reflog bytes, the same permissions, and the same flushes
 * to disk (fsync), read from the system calls each makes (strace). Where git's config asks
 * for a flush (core.fsync), ours decline and git writes.
 */
describe('commit objects and ref updates written without git are what git writes (bytes and fsync)', function () {
  this.timeout(60_000);
  let root: string;
  let n = 0;
  const epochSeconds = 1_700_000_000;
  const message = 'Merge change request #7: topic\n';
  const env = cleanEnv({
    GIT_AUTHOR_NAME: SYSTEM_IDENTITY.name,
    GIT_AUTHOR_EMAIL: SYSTEM_IDENTITY.email,
    GIT_AUTHOR_DATE: `@${epochSeconds} +0000`,
    GIT_COMMITTER_NAME: SYSTEM_IDENTITY.name,
    GIT_COMMITTER_EMAIL: SYSTEM_IDENTITY.email,
    GIT_COMMITTER_DATE: `@${epochSeconds} +0000`,
  });
  const git = (cwd: string, args: string[], input?: string) => execFileSync('git', args, { cwd, env, encoding: 'utf8', stdio: 'pipe', ...(input !== undefined ? { input } : {}) }).trim();

  interface Twin {
    dir: string;
    base: string;
    head: string;
    tree: string;
  }
  /** A bare repository with `main` (base) and `topic` (head), and the tree of their merge written. */
  async function twin(config: Array<[string, string]> = []): Promise<Twin> {
    const work = path.join(root, `w${++n}`);
    git(root, ['init', '-q', '-b', 'main', work]);
    await writeFile(path.join(work, 'a.txt'), 'a\n');
    git(work, ['add', '-A']);
    git(work, ['commit', '-q', '-m', 'one']);
    git(work, ['checkout', '-q', '-b', 'topic']);
    await writeFile(path.join(work, 'b.txt'), 'b\n');
    git(work, ['add', '-A']);
    git(work, ['commit', '-q', '-m', 'topic']);
    git(work, ['checkout', '-q', 'main']);
    await writeFile(path.join(work, 'c.txt'), 'c\n');
    git(work, ['add', '-A']);
    git(work, ['commit', '-q', '-m', 'main']);
    const dir = path.join(root, `r${n}.git`);
    git(root, ['clone', '-q', '--bare', work, dir]);
    for (const [k, v] of config) git(dir, ['config', k, v]);
    const base = git(dir, ['rev-parse', 'refs/heads/main']);
    const head = git(dir, ['rev-parse', 'refs/heads/topic']);
    return { dir, base, head, tree: git(dir, ['merge-tree', '--write-tree', base, head]) };
  }

  const objectFile = (dir: string, id: string) => path.join(dir, 'objects', id.slice(0, 2), id.slice(2));
  const mode = (file: string) => statSync(file).mode & 0o7777;

  /** Ours, in a process of its own under strace: the merge commit, then the branch moved to it. */
  function oursTraced(t: Twin): { commit: string | null; moved: string | null; trace: string } {
    const trace = path.join(root, `ours-${++n}.strace`);
    const script = `
      const { writeMergeCommit } = await import(${JSON.stringify(pathToFileURL(path.join(projectRoot, 'dist/infra/git/commit-object.js')).href)});
      const { casBranch } = await import(${JSON.stringify(pathToFileURL(path.join(projectRoot, 'dist/infra/git/ref-cas.js')).href)});
      const { localRefReader } = await import(${JSON.stringify(pathToFileURL(path.join(projectRoot, 'dist/infra/git/local-refs.js')).href)});
      const t = ${JSON.stringify(t)};
      const who = ${JSON.stringify(SYSTEM_IDENTITY)};
      const commit = writeMergeCommit(t.dir, { tree: t.tree, parents: [t.base, t.head], author: who, epochSeconds: ${epochSeconds}, message: ${JSON.stringify(message)} });
      const moved = commit && casBranch(localRefReader(${JSON.stringify(pathToFileURL(t.dir).href)}), t.dir, 'main', commit, t.base, { message: 'svc: merge', identity: who, epochSeconds: ${epochSeconds} });
      process.stdout.write(JSON.stringify({ commit, moved }));
    `;
    const r = spawnSync('strace', ['-f', '-y', '-o', trace, '-e', 'trace=fsync,fdatasync,sync_file_range,syncfs,link,rename,renameat,renameat2', process.execPath, '--input-type=module', '-e', script], { encoding: 'utf8' });
    expect(r.status, r.stderr).to.equal(0);
    return { ...(JSON.parse(r.stdout) as { commit: string | null; moved: string | null }), trace: readFileSync(trace, 'utf8') };
  }

  /** git's own, under strace: commit-tree, then update-ref from the expected old value. */
  function gitTraced(t: Twin): { commit: string; trace: string } {
    const trace = path.join(root, `git-${++n}.strace`);
    const strace = (args: string[], input?: string) =>
      execFileSync('strace', ['-f', '-y', '-o', trace, '-e', 'trace=fsync,fdatasync,sync_file_range,syncfs,link,rename,renameat,renameat2', 'git', ...args], { cwd: t.dir, env, encoding: 'utf8', stdio: 'pipe', ...(input !== undefined ? { input } : {}) }).trim();
    const commit = strace(['commit-tree', t.tree, '-p', t.base, '-p', t.head, '-F', '-'], message);
    const first = readFileSync(trace, 'utf8');
    strace(['update-ref', '-m', 'svc: merge', 'refs/heads/main', commit, t.base]);
    return { commit, trace: first + readFileSync(trace, 'utf8') };
  }

  /** What a trace flushed inside `dir`, by kind: the object's temporary file, the ref's lock, the reflog. */
  function flushes(trace: string, dir: string): string[] {
    const out: string[] = [];
    for (const line of trace.split('\n')) {
      const m = /\b(fsync|fdatasync|sync_file_range|syncfs)\(\d+<([^>]*)>/.exec(line);
      if (!m || !m[2]!.startsWith(dir)) continue;
      const file = m[2]!.slice(dir.length + 1);
      out.push(`${m[1]} ${/objects\/..\/tmp_obj_/.test(file) || /^objects\/..\/[0-9a-f]{38}$/.test(file) ? 'object' : file.endsWith('.lock') ? 'ref' : file.startsWith('logs/') ? 'reflog' : file}`);
    }
    return out.sort();
  }
  /** How the object and the ref reach their names: link of a temporary file, rename of the lock. */
  function publishes(trace: string, dir: string): string[] {
    const out: string[] = [];
    for (const line of trace.split('\n')) {
      const m = /\b(link|rename|renameat2?)\((?:[^"]*)"([^"]+)", (?:[^"]*)"([^"]+)"/.exec(line);
      if (!m) continue;
      const [from, to] = [m[2]!, m[3]!].map((p) => path.relative(dir, path.resolve(dir, p)));
      if (from!.startsWith('..')) continue;
      out.push(`${m[1]!.startsWith('rename') ? 'rename' : 'link'} ${from!.replace(/tmp_obj_\w+$/, 'tmp_obj_*')} -> ${to}`);
    }
    return out;
  }

  before(async function () {
    if (spawnSync('strace', ['-V']).status !== 0) skipUnlessCi(this, 'strace is not installed (apt-get install strace)');
    root = await mkdtemp(path.join(os.tmpdir(), 'svc-git-equivalence-'));
  });
  after(() => (root ? rm(root, { recursive: true, force: true }) : undefined));

  it('the same object id, object content and file mode as commit-tree; the same ref file, reflog line and modes as update-ref', async () => {
    const ours = await twin([['core.logAllRefUpdates', 'true']]);
    const theirs = await twin([['core.logAllRefUpdates', 'true']]);
    expect(ours.tree).to.equal(theirs.tree);
    const id = writeMergeCommit(ours.dir, { tree: ours.tree, parents: [ours.base, ours.head], author: SYSTEM_IDENTITY, epochSeconds, message });
    expect(casBranch(localRefReader(pathToFileURL(ours.dir).href), ours.dir, 'main', id!, ours.base, { message: 'svc: merge', identity: SYSTEM_IDENTITY, epochSeconds })).to.equal('moved');
    const gits = git(theirs.dir, ['commit-tree', theirs.tree, '-p', theirs.base, '-p', theirs.head, '-F', '-'], message);
    git(theirs.dir, ['update-ref', '-m', 'svc: merge', 'refs/heads/main', gits, theirs.base]);

    expect(id).to.equal(gits);
    // The loose object is zlib of `commit <size>\0<body>`; its compressed bytes depend on the
    // zlib build (Node's, the system's), its content and name do not.
    expect(inflateSync(readFileSync(objectFile(ours.dir, id!)))).to.deep.equal(inflateSync(readFileSync(objectFile(theirs.dir, gits))));
    expect(mode(objectFile(ours.dir, id!))).to.equal(mode(objectFile(theirs.dir, gits)));
    const ref = (d: string) => path.join(d, 'refs', 'heads', 'main');
    const log = (d: string) => path.join(d, 'logs', 'refs', 'heads', 'main');
    expect(readFileSync(ref(ours.dir), 'utf8')).to.equal(readFileSync(ref(theirs.dir), 'utf8'));
    expect(mode(ref(ours.dir))).to.equal(mode(ref(theirs.dir)));
    expect(readFileSync(log(ours.dir), 'utf8')).to.equal(readFileSync(log(theirs.dir), 'utf8'));
    expect(mode(log(ours.dir))).to.equal(mode(log(theirs.dir)));
    git(ours.dir, ['fsck', '--strict', '--no-dangling']);
    for (const d of [ours.dir]) {
      const fan = path.join(d, 'objects', id!.slice(0, 2));
      expect((await readdir(fan)).filter((f) => f.startsWith('tmp_obj_')), 'no temporary object left').to.deep.equal([]);
      expect(existsSync(`${ref(d)}.lock`), 'no lock left').to.equal(false);
    }
  });

  it("git's default config: neither flushes the object or the ref; both publish through a temporary object and the ref's lock", async () => {
    const ours = await twin([['core.logAllRefUpdates', 'true']]);
    const theirs = await twin([['core.logAllRefUpdates', 'true']]);
    const o = oursTraced(ours);
    const g = gitTraced(theirs);
    expect(o.moved).to.equal('moved');
    expect(o.commit).to.equal(g.commit);
    expect(flushes(o.trace, ours.dir)).to.deep.equal(flushes(g.trace, theirs.dir)).and.deep.equal([]);
    expect(publishes(o.trace, ours.dir)).to.deep.equal(publishes(g.trace, theirs.dir));
    expect(publishes(o.trace, ours.dir)).to.deep.equal([
      `link objects/${o.commit!.slice(0, 2)}/tmp_obj_* -> objects/${o.commit!.slice(0, 2)}/${o.commit!.slice(2)}`,
      'rename refs/heads/main.lock -> refs/heads/main',
    ]);
  });

  for (const [key, value] of [
    ['core.fsync', 'committed'],
    ['core.fsync', 'loose-object,reference'],
    ['core.fsyncObjectFiles', 'true'],
  ] as const) {
    it(`${key} = ${value}: git flushes, so ours write nothing and leave it to git (null)`, async () => {
      const ours = await twin([[key, value]]);
      const theirs = await twin([[key, value]]);
      const g = gitTraced(theirs);
      expect(flushes(g.trace, theirs.dir).length, 'git flushes here').to.be.greaterThan(0);
      const o = oursTraced(ours);
      expect(o.commit).to.equal(null);
      expect(flushes(o.trace, ours.dir)).to.deep.equal([]);
      expect(publishes(o.trace, ours.dir)).to.deep.equal([]);
      // And the ref alone, on a commit git wrote: declined too.
      expect(casBranch(localRefReader(pathToFileURL(ours.dir).href), ours.dir, 'main', ours.head, ours.base, { message: 'svc: merge' })).to.equal(null);
      expect(git(ours.dir, ['rev-parse', 'refs/heads/main'])).to.equal(ours.base);
    });
  }

  it('core.sharedRepository (git widens the ref file\'s permissions): the ref is left to git', async () => {
    const t = await twin([['core.sharedRepository', 'group']]);
    expect(casBranch(localRefReader(pathToFileURL(t.dir).href), t.dir, 'main', t.head, t.base, { message: 'svc: merge' })).to.equal(null);
  });
});
