import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { silentLogger } from '../../lib/logger.js';
import { cloneRepo, pullSessionBranch, RepoError, repoStatus, type RepoSettings } from '../../agentd/repo.js';
import { gitSync, makeRemote, tempDir } from './support/harness.js';

/** The checkout logic against real git and file:// remotes, in-process. */
describe('agentd repo (int)', function () {
  this.timeout(30_000);
  let t: ReturnType<typeof tempDir>;
  let remote: ReturnType<typeof makeRemote>;
  let settings: RepoSettings;

  beforeEach(() => {
    t = tempDir();
    remote = makeRemote(t.dir);
    settings = {
      workspace: path.join(t.dir, 'ws'),
      repoUrl: remote.url,
      branch: remote.branch,
      baseRef: 'main',
      apiUrl: undefined,
      projectId: undefined,
      token: 'unused',
    };
  });
  afterEach(() => t.cleanup());

  it('clones onto the session branch, tracking origin', async () => {
    await cloneRepo(settings, silentLogger);
    expect(await repoStatus(settings.workspace)).to.deep.equal({ branch: remote.branch, commit: remote.tip(remote.branch) });
    expect(gitSync(['rev-parse', '--abbrev-ref', '@{upstream}'], settings.workspace)).to.equal(`origin/${remote.branch}`);
  });

  it('fetches instead of cloning when the workspace already holds the repo', async () => {
    await cloneRepo(settings, silentLogger);
    const sha = remote.push(remote.branch, 'b.txt', 'b');
    await cloneRepo(settings, silentLogger);
    expect((await repoStatus(settings.workspace)).commit).to.equal(sha);
  });

  it('refuses a non-empty workspace without a repository, and option-like ref names', async () => {
    mkdirSync(settings.workspace, { recursive: true });
    writeFileSync(path.join(settings.workspace, 'stray'), 'x');
    let err: unknown;
    await cloneRepo(settings, silentLogger).catch((e: unknown) => (err = e));
    expect(err).to.be.instanceOf(RepoError);
    err = undefined;
    await cloneRepo({ ...settings, branch: '--upload-pack=touch /tmp/pwned' }, silentLogger).catch((e: unknown) => (err = e));
    expect((err as RepoError).code).to.equal('bad_ref');
  });

  it('fast-forwards on pull and reports both commits; refuses to drop diverged local work', async () => {
    await cloneRepo(settings, silentLogger);
    const before = remote.tip(remote.branch);
    const sha = remote.push(remote.branch, 'c.txt', 'c');
    expect(await pullSessionBranch(settings, silentLogger)).to.deep.equal({ before, after: sha });
    gitSync(['-c', 'user.name=a', '-c', 'user.email=a@x', 'commit', '--allow-empty', '-m', 'local'], settings.workspace);
    remote.push(remote.branch, 'd.txt', 'd');
    let err: unknown;
    await pullSessionBranch(settings, silentLogger).catch((e: unknown) => (err = e));
    expect((err as RepoError).code).to.equal('not_fast_forward');
  });

  it('reports nulls for a directory that is not a repository', async () => {
    expect(await repoStatus(t.dir)).to.deep.equal({ branch: null, commit: null });
  });
});
