import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { bootstrapUser } from '../../../services/accounts/service.js';
import { createProjectRepos } from '../../../infra/git/project-repos.js';
import type { ProjectRecord } from '../../../domain/project.js';
import { loadConfig } from '../../../infra/config.js';
import { createEngine } from '../../../infra/git/engine.js';
import { silentLogger } from '../../../lib/logger.js';
import { syncManifest } from '../../../services/manifest/sync.js';
import { MemoryQueue } from '../../support/memory-queue.js';
import { APP_DEPLOY } from '../../../services/apps/sync.js';
import { createProcessProvider } from '../../../infra/sandbox/process.js';
import type { SandboxHandle, SandboxProvider, SandboxSpec } from '../../../infra/sandbox/port.js';
import { secretBox } from '../../../infra/secret-box.js';
import { handleSessionCommand, loadSession } from '../../../services/sessions/handle.js';
import { provisionSession, sweepIdle } from '../../../services/sessions/provision.js';
import { sandboxSettings } from '../../../services/sessions/sandbox-settings.js';
import { createSession, type SessionDeps } from '../../../services/sessions/service.js';
import { SESSION_STOP } from '../../../services/sessions/jobs.js';
import { readStream } from '../../../infra/event-store.js';
import { sessionStreamId } from '../../../domain/session/index.js';
import { projectQueries } from '../../../sql/queries/projects.js';
import { createTestDb, type TestDb } from '../../support/db.js';
import { fixtureRepo, type FixtureRepo } from '../../support/repo.js';
import { TEST_ENV } from '../../support/server.js';
import { fakeRuntime, killSandboxesUnder } from '../../support/sessions.js';

/**
 * svc.toml `[sandbox]` reaches the sessions: the manifest in force (stored by a real sync)
 * shapes the spec the provider is handed, the Dockerfile is read at the session's base
 * commit, and the idle sweep holds each project to its own `idle_timeout_minutes`
 * (through the injectable clock, against the real SQL).
 */
describe('sessions: the manifest [sandbox] settings', function () {
  this.timeout(60_000);
  let db: TestDb;
  let repo: FixtureRepo;
  let dataDir: string;
  let deps: SessionDeps;
  let userId: string;
  let accountId: string;
  // Later than every sweep of the idle test below: the sessions the other tests provision
  // (their events stamped by this clock) are never idle when that test sweeps.
  let now = new Date('2026-01-06T10:00:00Z');
  const queue = new MemoryQueue();
  const handed: SandboxSpec[] = [];
  const started: SandboxHandle[] = [];

  const newProject = async (slug: string, files: Record<string, string | null>): Promise<{ project: ProjectRecord; sha: string }> => {
    const branch = `main-${slug}`;
    const sha = await repo.commit(branch, files, { from: 'main' });
    const project = (await db.db.one<ProjectRecord>(
      projectQueries.insert({ projectId: randomUUID(), accountId, name: slug, slug, repoUrl: repo.url, repoCredentialsEnc: null, defaultBranch: branch }),
    ))!;
    const synced = await syncManifest({ db: db.db, repos: deps.repos, logger: silentLogger, enqueueApp: async (job) => void (await queue.enqueue(APP_DEPLOY, job)) }, project, 'test');
    expect(synced.errors).to.deep.equal([]);
    return { project, sha };
  };

  /** A session driven to `running` through its events (no sandbox), its last activity at `at`. */
  const runningSession = async (project: ProjectRecord, at: Date, sha: string): Promise<string> => {
    now = at;
    const s = await createSession(deps, { project, userId });
    const id = s.session_id;
    const sandbox = randomUUID();
    const meta = { actor: userId, now: at };
    await handleSessionCommand(db.db, id, () => ({ type: 'RecordBranchCut', data: { base_commit_sha: sha }, meta }));
    await handleSessionCommand(db.db, id, () => ({ type: 'RequestSandbox', data: { sandbox_id: sandbox, provider: 'process' }, meta }));
    await handleSessionCommand(db.db, id, () => ({ type: 'RecordSandboxActive', data: { sandbox_id: sandbox, url: 'http://127.0.0.1:9', ref: '0' }, meta }));
    await handleSessionCommand(db.db, id, () => ({ type: 'MarkRunning', data: { sandbox_id: sandbox }, meta }));
    return id;
  };
  const statusOf = async (id: string) => (await loadSession(db.db, id)).state?.status;

  before(async () => {
    db = await createTestDb();
    repo = await fixtureRepo();
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'svc-sbxset-'));
    const config = loadConfig({ SVC_DATA_DIR: dataDir, SVC_ALLOW_FILE_REPOS: '1', LOG_LEVEL: 'silent', ...TEST_ENV, SVC_AGENT_RUNTIME: fakeRuntime, SVC_SESSION_IDLE_MINUTES: '600', SVC_SESSION_PROVISION_TIMEOUT_SECONDS: '30' });
    const secrets = secretBox(randomBytes(32));
    const real = createProcessProvider({ dataDir, logger: silentLogger, runtime: fakeRuntime });
    // The real process provider, recording every spec it is handed.
    // No HTTP server here to serve /git (a sandbox's clone URL for every project): the
    // process sandbox, which shares this host's filesystem, clones the fixture directly.
    const direct = (spec: SandboxSpec): SandboxSpec => ({ ...spec, env: { ...spec.env, SVC_REPO_URL: repo.url } });
    const provider: SandboxProvider = { ...real, name: real.name, create: async (spec) => (handed.push(spec), started[started.length] = await real.create(direct(spec))) };
    deps = {
      config,
      db: db.db,
      activity: new Map(),
      logger: silentLogger,
      secrets,
      repos: createProjectRepos({ dataDir, engine: await createEngine('git'), secrets, logger: silentLogger }),
      queue,
      provider,
      apiUrl: () => 'http://127.0.0.1:9/v1',
      now: () => now,
    };
    const u = await bootstrapUser(db.db, { email: 'sbx@example.test' });
    userId = u.user_id;
    accountId = u.account_id;
  });
  after(async () => {
    for (const h of started) await deps.provider!.destroy(h).catch(() => undefined);
    await killSandboxesUnder(dataDir);
    await db?.drop();
    await repo?.cleanup();
    await rm(dataDir, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
  });

  it("provisioning hands the provider the manifest's image and resources", async () => {
    const toml = '[sandbox]\nimage = "ghcr.io/acme/dev:1"\ncpus = 1.5\nmemory_mb = 768\n';
    const { project } = await newProject('limits', { 'svc.toml': toml });
    const s = await createSession(deps, { project, userId });
    expect(await provisionSession(deps, s.session_id)).to.equal('running');
    const spec = handed.find((h) => h.sessionId === s.session_id);
    expect(spec, 'the provider was asked for a sandbox').to.not.equal(undefined);
    expect(spec!.image).to.equal('ghcr.io/acme/dev:1');
    expect(spec!.resources).to.deep.equal({ cpus: 1.5, memoryMb: 768 });
    expect(spec!.dockerfile).to.equal(undefined); // an image wins; and process builds nothing
  });

  it('a project without [sandbox]: the spec carries no image, Dockerfile or limits', async () => {
    const { project } = await newProject('plain', { 'svc.toml': '[agent]\nconfig_dir = ".svc/agent"\n' });
    const s = await createSession(deps, { project, userId });
    expect(await provisionSession(deps, s.session_id)).to.equal('running');
    const spec = handed.find((h) => h.sessionId === s.session_id)!;
    expect(spec).to.not.have.any.keys('image', 'dockerfile', 'resources');
  });

  it("docker: the Dockerfile the manifest names is read at the session's base commit, not at the branch's tip", async () => {
    const v1 = 'ARG SVC_SANDBOX_IMAGE\nFROM ${SVC_SANDBOX_IMAGE}\nRUN echo v1\n';
    const { project, sha } = await newProject('dockerfile', { 'svc.toml': '[sandbox]\ndockerfile = "docker/dev.Dockerfile"\n', 'docker/dev.Dockerfile': v1 });
    const later = await repo.commit(project.default_branch, { 'docker/dev.Dockerfile': 'FROM scratch\n' });
    await deps.repos.for(project).readTips([project.default_branch]); // the mirror has both commits
    expect(await sandboxSettings(deps, 'docker', project, sha)).to.deep.equal({ dockerfile: v1 });
    expect(await sandboxSettings(deps, 'docker', project, later)).to.deep.equal({ dockerfile: 'FROM scratch\n' });
    // Not built by the other providers: nothing read for them.
    expect(await sandboxSettings(deps, 'kubernetes', project, sha)).to.deep.equal({});
    expect(await sandboxSettings(deps, 'process', project, sha)).to.deep.equal({});
    // A named Dockerfile the commit lacks fails the sandbox, naming it.
    const gone = await repo.commit(project.default_branch, { 'docker/dev.Dockerfile': null });
    await deps.repos.for(project).readTips([project.default_branch]);
    const err = await sandboxSettings(deps, 'docker', project, gone).then(
      () => undefined,
      (e: Error & { code?: string }) => e,
    );
    expect(err?.code).to.equal('create_failed');
    expect(err?.message).to.match(/dockerfile 'docker\/dev\.Dockerfile' is not in the repository at the session's base commit/);
  });

  it('docker: .svc/Dockerfile by default when the repo has one, nothing when it has none; an image wins', async () => {
    const { project, sha } = await newProject('default-dockerfile', { 'svc.toml': '[sandbox]\ncpus = 2\n', '.svc/Dockerfile': 'FROM base\n' });
    expect(await sandboxSettings(deps, 'docker', project, sha)).to.deep.equal({ dockerfile: 'FROM base\n', resources: { cpus: 2 } });
    const none = await newProject('no-dockerfile', { 'svc.toml': null });
    expect(await sandboxSettings(deps, 'docker', none.project, none.sha)).to.deep.equal({});
    const img = await newProject('image-wins', { 'svc.toml': '[sandbox]\nimage = "acme/dev:2"\n', '.svc/Dockerfile': 'FROM base\n' });
    expect(await sandboxSettings(deps, 'docker', img.project, img.sha)).to.deep.equal({ image: 'acme/dev:2' });
  });

  it('a project never synced: for docker and kubernetes the svc.toml at its default branch tip, read, not stored', async () => {
    const sha = await repo.commit('main-unsynced', { 'svc.toml': '[sandbox]\nmemory_mb = 128\n' }, { from: 'main' });
    const project = (await db.db.one<ProjectRecord>(
      projectQueries.insert({ projectId: randomUUID(), accountId, name: 'unsynced', slug: 'unsynced', repoUrl: repo.url, repoCredentialsEnc: null, defaultBranch: 'main-unsynced' }),
    ))!;
    expect(await sandboxSettings(deps, 'kubernetes', project, sha)).to.deep.equal({ resources: { memoryMb: 128 } });
    // process and bwrap apply none of it: no git read for them.
    expect(await sandboxSettings(deps, 'process', project, sha)).to.deep.equal({});
    expect(await db.db.one({ text: 'SELECT 1 FROM project_manifests WHERE project_id = $1', values: [project.project_id] })).to.equal(undefined);
  });

  it("the idle sweep holds each project to its own idle_timeout_minutes, others to SVC_SESSION_IDLE_MINUTES (600)", async () => {
    const t0 = new Date('2026-01-05T12:00:00Z');
    const short = await newProject('idle-short', { 'svc.toml': '[sandbox]\nidle_timeout_minutes = 5\n' });
    const plain = await newProject('idle-default', { 'svc.toml': null });
    const a = await runningSession(short.project, t0, short.sha);
    const b = await runningSession(plain.project, t0, plain.sha);
    const stops = () => queue.sent(SESSION_STOP).map((d) => (d as { session_id: string }).session_id);

    now = new Date(t0.getTime() + 4 * 60_000);
    expect(await sweepIdle(deps)).to.equal(0);
    expect(await statusOf(a)).to.equal('running');

    now = new Date(t0.getTime() + 6 * 60_000);
    expect(await sweepIdle(deps)).to.equal(1);
    expect(await statusOf(a)).to.equal('stopped');
    expect(await statusOf(b)).to.equal('running');
    expect(stops()).to.include(a).and.not.include(b);
    const events = await readStream(db.db, sessionStreamId(a));
    expect(events.find((e) => e.type === 'SessionStopped')?.data).to.include({ reason: 'idle' });

    now = new Date(t0.getTime() + 599 * 60_000);
    expect(await sweepIdle(deps)).to.equal(0);
    now = new Date(t0.getTime() + 601 * 60_000);
    expect(await sweepIdle(deps)).to.equal(1);
    expect(await statusOf(b)).to.equal('stopped');
  });
});
