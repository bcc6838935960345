import { expect } from 'chai';
import { randomUUID, randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import nock from 'nock';
import { DomainError } from '../../../domain/errors.js';
import { cutOnGitHub, cutSessionBranch, githubRepo } from '../../../services/sessions/branch-cut.js';
import { createProjectRepos } from '../../../infra/git/project-repos.js';
import type { ProjectRecord } from '../../../domain/project.js';
import { createEngine } from '../../../infra/git/engine.js';
import { secretBox } from '../../../infra/secret-box.js';
import { silentLogger } from '../../../lib/logger.js';
import { fixtureRepo, type FixtureRepo } from '../../support/repo.js';
import { startGitHttpServer, type GitHttpServer } from '../../agentd/support/git-http-server.js';
import { useNock } from '../../cli/nock-scope.js';

const box = secretBox(randomBytes(32));

async function refused(p: Promise<unknown>): Promise<DomainError> {
  try {
    await p;
  } catch (err) {
    expect(err).to.be.instanceOf(DomainError);
    return err as DomainError;
  }
  throw new Error('expected a refusal');
}

describe('sessions: branch cut', function () {
  this.timeout(60_000);
  let repo: FixtureRepo;
  let dataDir: string;
  let deps: Parameters<typeof cutSessionBranch>[0];
  const project = (over: Partial<ProjectRecord>): ProjectRecord => ({
    project_id: randomUUID(),
    account_id: randomUUID(),
    name: 'p',
    slug: 'p',
    repo_url: repo.url,
    repo_credentials_enc: null,
    default_branch: 'main',
    created_at: new Date(),
    ...over,
  });

  before(async () => {
    repo = await fixtureRepo();
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'svc-cut-'));
    deps = { repos: createProjectRepos({ dataDir, engine: await createEngine('git'), secrets: box, logger: silentLogger }), secrets: box, logger: silentLogger };
  });
  after(async () => {
    await repo.cleanup();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('a local repository: update-ref from the base tip, never moving an existing branch', async () => {
    const p = project({});
    const id = randomUUID();
    const tip = repo.tip('main');
    expect(await cutSessionBranch(deps, p, id, 'main')).to.equal(tip);
    expect(repo.tip(id)).to.equal(tip);
    // Retried (the job ran twice): the branch is taken as cut; an agent's push is not undone.
    const pushed = await repo.commit(id, { 'work.txt': 'x\n' });
    expect(await cutSessionBranch(deps, p, id, 'main')).to.equal(pushed);
    expect(repo.tip(id)).to.equal(pushed);
    expect((await refused(cutSessionBranch(deps, p, randomUUID(), 'nope'))).code).to.equal('not_found');
    expect((await refused(cutSessionBranch(deps, p, '-bad', 'main'))).code).to.equal('validation');
    expect((await refused(cutSessionBranch(deps, p, randomUUID(), 'a..b'))).code).to.equal('validation');
  });

  describe('a generic git remote (smart HTTP with credentials)', () => {
    let http: GitHttpServer;
    before(async () => {
      http = await startGitHttpServer(path.dirname(repo.bare), 'u', 'p4ss');
    });
    after(() => http.close());

    it('pushes the base tip to the session branch with a lease that it does not exist', async () => {
      const p = project({ repo_url: `${http.url}/remote.git`, repo_credentials_enc: box.seal(JSON.stringify({ username: 'u', password: 'p4ss' })) });
      const id = randomUUID();
      const tip = repo.tip('main');
      expect(await cutSessionBranch(deps, p, id, 'main')).to.equal(tip);
      expect(repo.tip(id)).to.equal(tip);
      expect(http.users.length).to.be.greaterThan(0);
      // Again: idempotent, at the branch's own tip.
      const pushed = await repo.commit(id, { 'w.txt': 'y\n' });
      expect(await cutSessionBranch(deps, p, id, 'main')).to.equal(pushed);
      expect(repo.tip(id)).to.equal(pushed);
    });
  });

  describe('GitHub (REST, nock)', () => {
    useNock();
    const api = 'https://api.github.com';
    const sha = 'a'.repeat(40);
    const other = 'b'.repeat(40);
    const gh = { apiUrl: api, owner: 'acme', repo: 'widgets', token: 'ghs_secret' };

    it('recognises github.com repositories', () => {
      expect(githubRepo('https://github.com/acme/widgets.git')).to.deep.equal({ owner: 'acme', repo: 'widgets' });
      expect(githubRepo('https://github.com/acme/widgets')).to.deep.equal({ owner: 'acme', repo: 'widgets' });
      expect(githubRepo('https://gitlab.com/acme/widgets.git')).to.equal(null);
      expect(githubRepo('https://github.com.evil.test/acme/widgets')).to.equal(null);
    });

    it('reads the base tip and creates the ref', async () => {
      let posted: unknown;
      nock(api, { reqheaders: { authorization: 'Bearer ghs_secret' } })
        .get('/repos/acme/widgets/git/ref/heads/main').reply(200, { ref: 'refs/heads/main', object: { sha, type: 'commit' } })
        .post('/repos/acme/widgets/git/refs', (b) => ((posted = b), true)).reply(201, { ref: 'refs/heads/s1', object: { sha } });
      expect(await cutOnGitHub(gh, 's1', 'main')).to.equal(sha);
      expect(posted).to.deep.equal({ ref: 'refs/heads/s1', sha });
    });

    it('422 "Reference already exists" is a retry of a cut that happened: the branch tip is answered', async () => {
      nock(api)
        .get('/repos/acme/widgets/git/ref/heads/main').reply(200, { object: { sha } })
        .post('/repos/acme/widgets/git/refs').reply(422, { message: 'Reference already exists' })
        .get('/repos/acme/widgets/git/ref/heads/s1').reply(200, { object: { sha: other } });
      expect(await cutOnGitHub(gh, 's1', 'main')).to.equal(other);
    });

    it('401: the credentials are refused (unavailable, no retry loop)', async () => {
      nock(api).get('/repos/acme/widgets/git/ref/heads/main').reply(401, { message: 'Bad credentials' });
      const err = await refused(cutOnGitHub(gh, 's1', 'main'));
      expect(err.code).to.equal('unavailable');
      expect(err.message).to.not.include('ghs_secret');
    });

    it('404 on the base: the branch does not exist; 404 on create: the repository is not reachable', async () => {
      nock(api).get('/repos/acme/widgets/git/ref/heads/main').reply(404, { message: 'Not Found' });
      expect((await refused(cutOnGitHub(gh, 's1', 'main'))).code).to.equal('not_found');
      nock(api)
        .get('/repos/acme/widgets/git/ref/heads/main').reply(200, { object: { sha } })
        .post('/repos/acme/widgets/git/refs').reply(404, { message: 'Not Found' });
      expect((await refused(cutOnGitHub(gh, 's1', 'main'))).code).to.equal('not_found');
    });

    it('a 422 for any other reason is not taken for success', async () => {
      nock(api)
        .get('/repos/acme/widgets/git/ref/heads/main').reply(200, { object: { sha } })
        .post('/repos/acme/widgets/git/refs').reply(422, { message: 'Reference update failed' });
      expect((await refused(cutOnGitHub(gh, 's1', 'main'))).code).to.equal('unavailable');
    });

    it('projects on github.com go through the REST API with the stored token', async () => {
      nock(api, { reqheaders: { authorization: 'Bearer tok' } })
        .get('/repos/acme/widgets/git/ref/heads/dev').reply(200, { object: { sha } })
        .post('/repos/acme/widgets/git/refs').reply(201, {});
      const p = project({ repo_url: 'https://github.com/acme/widgets.git', repo_credentials_enc: box.seal(JSON.stringify({ username: 'x', password: 'tok' })) });
      expect(await cutSessionBranch(deps, p, 's2', 'dev')).to.equal(sha);
    });
  });
});
