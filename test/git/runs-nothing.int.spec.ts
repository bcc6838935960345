import { expect } from 'chai';
import { chmod, mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { openProjectRepo } from '../../infra/git/open-repo.js';
import { managedRepoPath, reposDirOf } from '../../infra/git/managed-repo.js';
import type { GitEngine, ProjectRepo } from '../../infra/git/port.js';
import { SYSTEM_IDENTITY } from '../../infra/git/port.js';
import type { ProjectRecord } from '../../domain/project.js';
import { cutSessionBranch } from '../../services/sessions/branch-cut.js';
import { cleanEnv, runGit } from '../../lib/git-run.js';
import { silentLogger as logger } from '../../lib/logger.js';
import { git, gitOk, authedUrl, workDir } from '../support/git-client.js';
import { startTestServer } from '../support/server.js';
import { client } from '../support/http.js';
import { CR_ONLY_MESSAGE } from '../../infra/git/pre-receive.js';
import { enginesUnderTest, forEachEngine } from './support/engines.js';

/**
 * Server-side git runs nothing a repository carries. A repository is
 * booby-trapped: every hook, and every config key that names a command, runs a script that
 * writes its name into a marker file. The server then does everything it does with a
 * repository; the marker file must not exist. A control shows the traps are live: plain
 * git in the same repository fires them.
 */
const HOOKS = [
  'pre-receive', 'update', 'post-receive', 'post-update', 'reference-transaction', 'proc-receive', 'push-to-checkout',
  'pre-commit', 'prepare-commit-msg', 'commit-msg', 'post-commit', 'post-checkout', 'post-merge', 'pre-push',
  'post-rewrite', 'pre-auto-gc', 'post-index-change', 'fsmonitor-watchman', 'sendemail-validate',
];

interface Trap {
  /** Labels of whatever ran, in order (empty when nothing did). */
  ran(): Promise<string[]>;
}

/** Writes the traps into the git directory `gitDir` (after the fixture's own pushes). */
async function boobyTrap(gitDir: string, root: string): Promise<Trap> {
  const bin = path.join(root, 'evil');
  const marker = path.join(root, 'ran');
  await mkdir(bin, { recursive: true });
  const script = async (label: string): Promise<string> => {
    const file = path.join(bin, label);
    // Passes stdin through, so a filter or textconv that did run would not break the output.
    await writeFile(file, `#!/bin/sh\necho '${label}' >> '${marker}'\ncat 2>/dev/null\nexit 0\n`);
    await chmod(file, 0o755);
    return file;
  };
  await mkdir(path.join(gitDir, 'hooks'), { recursive: true });
  for (const h of HOOKS) {
    await writeFile(path.join(gitDir, 'hooks', h), `#!/bin/sh\nexec '${await script(`hook-${h}`)}' "$@"\n`);
    await chmod(path.join(gitDir, 'hooks', h), 0o755);
  }
  const hooksPath = path.join(root, 'evil-hooks');
  await mkdir(hooksPath, { recursive: true });
  for (const h of HOOKS) {
    await writeFile(path.join(hooksPath, h), `#!/bin/sh\nexec '${await script(`hookspath-${h}`)}' "$@"\n`);
    await chmod(path.join(hooksPath, h), 0o755);
  }
  const included = path.join(root, 'included.config');
  await writeFile(included, `[merge "inc"]\n\tdriver = ${await script('included-merge-driver')} %O %A %B\n[core]\n\tpager = ${await script('included-pager')}\n`);
  const config: Array<[string, string]> = [
    ['core.hooksPath', hooksPath],
    ['core.fsmonitor', await script('core.fsmonitor')],
    ['core.sshCommand', await script('core.sshCommand')],
    ['core.pager', await script('core.pager')],
    ['core.editor', await script('core.editor')],
    ['core.askPass', await script('core.askPass')],
    ['core.alternateRefsCommand', await script('core.alternateRefsCommand')],
    ['credential.helper', await script('credential.helper')],
    ['gpg.program', await script('gpg.program')],
    ['commit.gpgSign', 'true'],
    ['filter.evil.clean', await script('filter.clean')],
    ['filter.evil.smudge', await script('filter.smudge')],
    ['filter.evil2.process', await script('filter.process')],
    ['merge.evil.driver', `${await script('merge.driver')} %O %A %B`],
    ['diff.evil.textconv', await script('diff.textconv')],
    ['diff.evil.command', await script('diff.command')],
    ['diff.external', await script('diff.external')],
    ['uploadpack.packObjectsHook', await script('uploadpack.packObjectsHook')],
    ['include.path', included],
  ];
  for (const [k, v] of config) await gitOk(gitDir, ['config', '--add', k, v]);
  await mkdir(path.join(gitDir, 'info'), { recursive: true });
  await writeFile(path.join(gitDir, 'info', 'attributes'), '* filter=evil diff=evil merge=evil\n*.p filter=evil2 merge=inc\n');
  return {
    ran: async () =>
      (await readFile(marker, 'utf8').catch(() => ''))
        .split('\n')
        .filter(Boolean),
  };
}

/** A bare origin with main and a diverged feature that changes the same file (so a merge runs a file-level merge). */
async function fixture(root: string): Promise<{ origin: string; main: string; feature: string }> {
  const origin = path.join(root, 'origin.git');
  const work = path.join(root, 'work');
  await gitOk(root, ['init', '-q', '--bare', '-b', 'main', origin]);
  await gitOk(root, ['clone', '-q', origin, work]);
  await gitOk(work, ['checkout', '-q', '-b', 'main']);
  const lines = Array.from({ length: 12 }, (_, i) => `line ${i}`);
  await writeFile(path.join(work, 'a.txt'), lines.join('\n') + '\n');
  await writeFile(path.join(work, 'x.p'), 'p\n');
  await writeFile(path.join(work, '.gitattributes'), '* filter=evil diff=evil merge=evil\n');
  await gitOk(work, ['add', '-A']);
  await gitOk(work, ['commit', '-q', '-m', 'base']);
  await gitOk(work, ['checkout', '-q', '-b', 'feature']);
  await writeFile(path.join(work, 'a.txt'), ['feature', ...lines.slice(1)].join('\n') + '\n');
  await writeFile(path.join(work, 'x.p'), 'p feature\n');
  await gitOk(work, ['commit', '-q', '-am', 'feature']);
  await gitOk(work, ['checkout', '-q', 'main']);
  await writeFile(path.join(work, 'a.txt'), [...lines.slice(0, 11), 'main'].join('\n') + '\n');
  await gitOk(work, ['commit', '-q', '-am', 'main']);
  await gitOk(work, ['push', '-q', 'origin', 'main', 'feature']);
  return { origin, main: await gitOk(origin, ['rev-parse', 'main']), feature: await gitOk(origin, ['rev-parse', 'feature']) };
}

const engines = await enginesUnderTest();

forEachEngine(engines, 'server-side git runs nothing a file:// repository carries', (engine: GitEngine) => {
  let root: string;
  let origin: string;
  let main: string;
  let feature: string;
  let trap: Trap;
  let repo: ProjectRepo;

  beforeEach(async () => {
    root = await mkdtemp(path.join(os.tmpdir(), 'svc-trap-'));
    ({ origin, main, feature } = await fixture(root));
    trap = await boobyTrap(origin, root);
    repo = openProjectRepo({ location: { projectId: 'trap', url: pathToFileURL(origin).href }, mirrorsDir: path.join(root, 'mirrors'), engine, logger });
  });
  afterEach(() => rm(root, { recursive: true, force: true }));

  it('the traps are live: plain git in the repository runs its hooks and its filters', async () => {
    await gitOk(origin, ['update-ref', 'refs/heads/probe', main]);
    await gitOk(origin, ['archive', '--format=tar', '-o', path.join(root, 'probe.tar'), main]);
    const ran = await trap.ran();
    expect(ran).to.include('hookspath-reference-transaction');
    expect(ran).to.include('filter.smudge');
  });

  it('branch cut, tips, preview, diff, file reads, export, a one-file commit and a three-way merge run none of them', async () => {
    expect(await repo.readTips(['main', 'feature'])).to.deep.equal({ main, feature });
    const project = { project_id: 'trap', slug: 'trap', repo_url: pathToFileURL(origin).href, repo_credentials_enc: null, repo_managed: false } as unknown as ProjectRecord;
    const cut = await cutSessionBranch({ repos: { for: () => repo }, secrets: null as never, logger }, project, 'session-1', 'main');
    expect(cut).to.equal(main);
    expect((await repo.preview('main', 'feature')).can_merge).to.equal(true);
    const diff = await repo.diffBranches('main', 'feature');
    expect(diff.files.map((f) => f.path).sort()).to.deep.equal(['a.txt', 'x.p']);
    await repo.diffCommits(main, feature);
    expect((await repo.readFileAt(feature, 'a.txt'))!.toString()).to.match(/^feature\n/);
    const dest = path.join(root, 'export');
    await mkdir(dest);
    await repo.exportTree(feature, dest);
    expect(await readFile(path.join(dest, 'x.p'), 'utf8')).to.equal('p feature\n');
    await repo.commitFileOnNewBranch({ branch: 'edit', fromSha: main, path: 'new.txt', content: 'new\n', message: 'edit', author: SYSTEM_IDENTITY });
    expect(await repo.branchContains('main', main)).to.equal(true);
    const merged = await repo.merge({ base_ref: 'main', head_ref: 'feature', message: 'merge' });
    expect(merged.kind).to.equal('merge-commit');
    expect(await gitOk(origin, ['rev-parse', 'main'])).to.equal(merged.merge_commit_sha);
    expect(await gitOk(origin, ['show', `${merged.merge_commit_sha}:a.txt`])).to.match(/^feature\n[\s\S]*\nmain$/);
    expect(await trap.ran(), 'nothing of the repository ran').to.deep.equal([]);
  });

  it('the repository config changed to anything between calls changes nothing: git never reads it', async () => {
    await repo.preview('main', 'feature');
    await gitOk(origin, ['config', 'core.fsmonitor', path.join(root, 'evil', 'core.fsmonitor')]);
    await gitOk(origin, ['config', 'merge.evil.driver', `${path.join(root, 'evil', 'merge.driver')} %O %A %B`]);
    expect((await repo.merge({ base_ref: 'main', head_ref: 'feature', message: 'merge' })).kind).to.equal('merge-commit');
    expect(await trap.ran()).to.deep.equal([]);
  });
});

describe('server-side git runs nothing a repository carries: the runner', () => {
  it('git started by the runner ignores a repository’s hooks and fixed command settings, and a caller’s -c still wins', async () => {
    const root = await mkdtemp(path.join(os.tmpdir(), 'svc-trap-'));
    try {
      const { origin, main } = await fixture(root);
      const trap = await boobyTrap(origin, root);
      await runGit(['update-ref', 'refs/heads/probe', main], { cwd: origin });
      await runGit(['commit-tree', '-m', 'x', `${main}^{tree}`], { cwd: origin, env: { GIT_AUTHOR_NAME: 'a', GIT_AUTHOR_EMAIL: 'a@b', GIT_COMMITTER_NAME: 'a', GIT_COMMITTER_EMAIL: 'a@b' } });
      const r = await runGit(['config', '--get', 'core.hooksPath'], { cwd: origin });
      expect(r.stdout.toString().trim()).to.equal('/dev/null');
      const mine = await runGit(['-c', 'core.hooksPath=/elsewhere', 'config', '--get', 'core.hooksPath'], { cwd: origin });
      expect(mine.stdout.toString().trim()).to.equal('/elsewhere');
      const helpers = await runGit(['-c', 'credential.helper=mine', 'config', '--get-all', 'credential.helper'], { cwd: origin });
      expect(helpers.stdout.toString().split('\n').slice(0, -1), 'the repository’s helper is cleared, the caller’s follows').to.deep.equal([path.join(root, 'evil', 'credential.helper'), '', 'mine']);
      const ext = await runGit(['ls-remote', 'ext::sh -c touch% /tmp/never'], { cwd: origin, okCodes: [0, 128] });
      expect(ext.code).to.equal(128);
      // update-ref ran (no hook), commit-tree ran (no gpg). Drivers named by the repository
      // (filters, merge and diff drivers) are out of the runner's reach: the server never runs
      // git on a config it does not own (the view of a file:// repository, above).
      expect(await trap.ran()).to.deep.equal([]);
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });
});

describe('the runner keeps a caller’s own GIT_CONFIG_COUNT pairs', () => {
  it('agentd’s credential helper (two env pairs) follows the hardened ones; no pair is lost or renumbered over', async () => {
    const env = cleanEnv({ GIT_CONFIG_COUNT: '2', GIT_CONFIG_KEY_0: 'credential.helper', GIT_CONFIG_VALUE_0: '', GIT_CONFIG_KEY_1: 'credential.helper', GIT_CONFIG_VALUE_1: 'theirs', OTHER: 'x' });
    const n = Number(env.GIT_CONFIG_COUNT);
    const pairs = Array.from({ length: n }, (_, i) => [env[`GIT_CONFIG_KEY_${i}`], env[`GIT_CONFIG_VALUE_${i}`]]);
    expect(pairs.slice(-2)).to.deep.equal([['credential.helper', ''], ['credential.helper', 'theirs']]);
    expect(pairs).to.deep.include(['core.hooksPath', '/dev/null']);
    expect(env.OTHER).to.equal('x');
    const r = await runGit(['config', '--get-all', 'credential.helper'], { cwd: os.tmpdir(), env: { GIT_CONFIG_COUNT: '1', GIT_CONFIG_KEY_0: 'credential.helper', GIT_CONFIG_VALUE_0: 'theirs' } });
    expect(r.stdout.toString().split('\n').slice(0, -1)).to.deep.equal(['', 'theirs']);
  });
});

describe('server-side git runs nothing a managed repository carries', function () {
  this.timeout(120_000);

  it('smart HTTP fetch and push, branch cut, preview, diff and merge: only the server’s pre-receive runs', async () => {
    const srv = await startTestServer();
    const w = await workDir();
    const root = await mkdtemp(path.join(os.tmpdir(), 'svc-trap-'));
    try {
      const api = client(srv.url, srv.token);
      const created = await api.post('/v1/projects', { name: 'Trapped', slug: 'trapped' });
      expect(created.status, JSON.stringify(created.body)).to.equal(201);
      const project = created.body.project;
      const url = authedUrl(project.repo_url, srv.token);
      expect((await w.run(['clone', '-q', url, '.'])).code).to.equal(0);
      await w.ok(['checkout', '-q', '-b', 'main']);
      await w.commit({ 'a.txt': 'a\n', '.gitattributes': '* filter=evil diff=evil merge=evil\n' }, 'first');
      expect((await w.run(['push', '-q', 'origin', 'main'])).code).to.equal(0);
      const dir = managedRepoPath(reposDirOf({ dataDir: srv.dataDir }), project.project_id);
      const trap = await boobyTrap(dir, root);

      await w.ok(['checkout', '-q', '-b', 'topic']);
      await w.commit({ 'b.txt': 'b\n' }, 'topic');
      const pushed = await w.run(['push', '-q', 'origin', 'topic']);
      expect(pushed.code, pushed.stderr).to.equal(0);
      const refused = await w.run(['push', 'origin', 'topic:main']);
      expect(refused.stderr, 'the server’s own pre-receive still runs').to.contain(CR_ONLY_MESSAGE);
      expect((await w.run(['fetch', '-q', 'origin'])).code).to.equal(0);
      expect((await git(root, ['clone', '-q', url, path.join(root, 'second')])).code).to.equal(0);
      const base = `/v1/projects/trapped/change-requests`;
      const cr = await api.post(base, { title: 'T', head_ref: 'topic' });
      expect(cr.status, JSON.stringify(cr.body)).to.equal(201);
      expect((await api.get(`${base}/${cr.body.change_request.number}/diff`)).status).to.equal(200);
      const merged = await api.post(`${base}/${cr.body.change_request.number}/merge`, {});
      expect(merged.status, JSON.stringify(merged.body)).to.equal(200);
      expect(await trap.ran()).to.deep.equal([]);
      expect(await readdir(path.join(dir, 'hooks'))).to.include('post-receive', 'the planted hooks were there all along');
    } finally {
      await w.cleanup();
      await srv.stop();
      await rm(root, { recursive: true, force: true });
    }
  });
});
