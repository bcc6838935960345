import { expect } from 'chai';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { parseCrRef, projectContext, dashboardUrl } from '../../cli/context.js';
import { CliError, UsageError } from '../../cli/errors.js';
import { currentBranch } from '../../cli/git.js';
import { maskToken, normalizeUrl, resolveHost } from '../../cli/hosts.js';
import { findLink, writeLink } from '../../cli/link.js';
import { makeFactory, sandbox, type Sandbox } from './helpers.js';

describe('cli resolution', () => {
  let sb: Sandbox;
  beforeEach(async () => (sb = await sandbox()));
  afterEach(() => sb.cleanup());

  describe('host', () => {
    const config = { active_host: 'mine', hosts: { mine: { url: 'http://mine:1', token: 'svc_pat_mine' }, other: { url: 'http://other:2', token: 'svc_pat_other' } } };
    const link = { project_id: 'p', host: 'other', host_url: 'http://other:2' };

    it('--host beats SVC_API_URL, the link file and the active host', () => {
      const r = resolveHost(config, { SVC_API_URL: 'http://env:3/v1' }, 'selfhost', link);
      expect(r).to.include({ name: 'selfhost', url: 'http://localhost:8080', source: 'flag' });
    });

    it('SVC_API_URL beats the link file', () => {
      expect(resolveHost(config, { SVC_API_URL: 'http://env:3/v1' }, undefined, link)).to.include({ url: 'http://env:3', source: 'env' });
    });

    it("the link file's host beats the active host", () => {
      expect(resolveHost(config, {}, undefined, link)).to.include({ name: 'other', url: 'http://other:2', token: 'svc_pat_other', source: 'link' });
    });

    it('falls back to the active host, then to cloud', () => {
      expect(resolveHost(config, {}, undefined, undefined)).to.include({ name: 'mine', token: 'svc_pat_mine', source: 'active' });
      expect(resolveHost({ hosts: {} }, {}, undefined, undefined)).to.include({ name: 'cloud', source: 'active' });
    });

    it('a link to a host this config does not know is refused, so no token goes to its host_url', () => {
      const link = { project_id: 'p', host: 'elsewhere', host_url: 'http://elsewhere:9/v1' };
      for (const env of [{}, { SVC_CLI_TOKEN: 'svc_pat_secret' }]) {
        expect(() => resolveHost({ hosts: {} }, env, undefined, link)).to.throw(/unknown host "elsewhere" in \.svc\/link\.json/);
      }
    });

    it('SVC_CLI_TOKEN, then SVC_EXECUTOR_TOKEN, beat the stored token; SVC_TOKEN is never read', () => {
      expect(resolveHost(config, { SVC_CLI_TOKEN: 'cli', SVC_EXECUTOR_TOKEN: 'exec' }, undefined, undefined)).to.include({ token: 'cli', tokenSource: 'SVC_CLI_TOKEN' });
      expect(resolveHost(config, { SVC_EXECUTOR_TOKEN: 'exec' }, undefined, undefined)).to.include({ token: 'exec', tokenSource: 'SVC_EXECUTOR_TOKEN' });
      const r = resolveHost({ hosts: {} }, { SVC_TOKEN: 'service-key', SVC_API_URL: 'http://x' }, undefined, undefined);
      expect(r.token).to.equal(undefined);
    });

    it('an unknown --host is an error', () => {
      expect(() => resolveHost(config, {}, 'nope', undefined)).to.throw(CliError, /unknown host "nope"/);
    });

    it('normalizes URLs with or without /v1', () => {
      expect(normalizeUrl('http://x:8080/v1')).to.equal('http://x:8080');
      expect(normalizeUrl('http://x:8080/v1/')).to.equal('http://x:8080');
      expect(normalizeUrl('https://x/api/')).to.equal('https://x/api');
      expect(() => normalizeUrl('ftp://x')).to.throw(UsageError);
      expect(() => normalizeUrl('not a url')).to.throw(UsageError);
    });

    it('masks tokens', () => {
      expect(maskToken('svc_pat_abcdefghijklmnop')).to.equal('svc_pat_********mnop');
      expect(maskToken('short')).to.equal('********');
    });
  });

  describe('link file and project', () => {
    it('finds .svc/link.json from a subdirectory', async () => {
      await writeLink(sb.dir, { project_id: 'proj-1', account_id: 'acc', host: 'selfhost', host_url: 'http://localhost:8080' });
      const sub = path.join(sb.dir, 'a', 'b', 'c');
      await mkdir(sub, { recursive: true });
      const found = await findLink(sub);
      expect(found?.file).to.equal(path.join(sb.dir, '.svc', 'link.json'));
      expect(found?.link).to.deep.equal({ project_id: 'proj-1', account_id: 'acc', host: 'selfhost', host_url: 'http://localhost:8080' });
    });

    it('the nearest link file wins', async () => {
      await writeLink(sb.dir, { project_id: 'outer' });
      await writeLink(path.join(sb.dir, 'inner'), { project_id: 'inner' });
      expect((await findLink(path.join(sb.dir, 'inner')))?.link.project_id).to.equal('inner');
    });

    const ctx = (env: Record<string, string>, project?: string) =>
      projectContext(makeFactory({ configPath: sb.configPath, cwd: path.join(sb.dir, 'sub'), env: { SVC_CLI_TOKEN: 't', ...env } }).f, project ? { project } : {});

    it('--project > SVC_PROJECT_ID > link file', async () => {
      await mkdir(path.join(sb.dir, 'sub'), { recursive: true });
      await writeLink(sb.dir, { project_id: 'from-link', host: 'selfhost' });
      expect(await ctx({ SVC_PROJECT_ID: 'from-env' }, 'from-flag')).to.include({ projectId: 'from-flag', projectSource: 'flag' });
      expect(await ctx({ SVC_PROJECT_ID: 'from-env' })).to.include({ projectId: 'from-env', projectSource: 'SVC_PROJECT_ID' });
      expect(await ctx({})).to.include({ projectId: 'from-link', projectSource: 'link' });
    });

    it("nothing resolved: a CliError naming 'svc projects link'", async () => {
      await mkdir(path.join(sb.dir, 'sub'), { recursive: true });
      try {
        await ctx({});
        expect.fail('should throw');
      } catch (e) {
        expect(e).to.be.instanceOf(CliError);
        expect((e as CliError).hint).to.contain('svc projects link');
      }
    });
  });

  describe('change request references', () => {
    it('accepts 3, #3 and a uuid', () => {
      expect(parseCrRef('3')).to.equal('3');
      expect(parseCrRef('#3')).to.equal('3');
      expect(parseCrRef(3)).to.equal('3');
      expect(parseCrRef('7C0E1F2A-3B4C-4D5E-8F60-718293A4B5C6')).to.equal('7c0e1f2a-3b4c-4d5e-8f60-718293a4b5c6');
    });
    it('rejects anything else as a usage error', () => {
      for (const bad of ['0', '#', 'abc', '3a', '-1', '']) expect(() => parseCrRef(bad), bad).to.throw(UsageError);
    });
  });

  it('derives the dashboard URL from the API URL unless SVC_DASHBOARD_URL is set', () => {
    const f = (env: Record<string, string>) => makeFactory({ configPath: sb.configPath, env }).f;
    expect(dashboardUrl(f({}), 'https://api.svc.dev')).to.equal('https://svc.dev');
    expect(dashboardUrl(f({}), 'http://localhost:8080/v1')).to.equal('http://localhost:8080');
    expect(dashboardUrl(f({ SVC_DASHBOARD_URL: 'https://dash.example/' }), 'http://x')).to.equal('https://dash.example');
  });

  it('reads the current git branch from .git/HEAD, also in a subdirectory and a worktree', async () => {
    await mkdir(path.join(sb.dir, 'repo', '.git'), { recursive: true });
    await writeFile(path.join(sb.dir, 'repo', '.git', 'HEAD'), 'ref: refs/heads/feature/x\n');
    await mkdir(path.join(sb.dir, 'repo', 'src'), { recursive: true });
    expect(await currentBranch(path.join(sb.dir, 'repo', 'src'))).to.equal('feature/x');
    await mkdir(path.join(sb.dir, 'wt-git'), { recursive: true });
    await writeFile(path.join(sb.dir, 'wt-git', 'HEAD'), 'ref: refs/heads/wt-branch\n');
    await mkdir(path.join(sb.dir, 'wt'), { recursive: true });
    await writeFile(path.join(sb.dir, 'wt', '.git'), `gitdir: ${path.join(sb.dir, 'wt-git')}\n`);
    expect(await currentBranch(path.join(sb.dir, 'wt'))).to.equal('wt-branch');
    await writeFile(path.join(sb.dir, 'repo', '.git', 'HEAD'), 'a'.repeat(40) + '\n');
    expect(await currentBranch(path.join(sb.dir, 'repo'))).to.equal(undefined);
  });
});
