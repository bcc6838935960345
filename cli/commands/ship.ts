import path from 'node:path';
import type { Argv } from 'yargs';
import type { ChangeRequest, Project } from '../api-client.js';
import type { Args } from '../command-table.js';
import { hostContext, type HostContext } from '../context.js';
import { CliError } from '../errors.js';
import type { Factory } from '../factory.js';
import { str, withHost, withJson } from '../flags.js';
import { currentBranch } from '../git.js';
import { gitExec, isPlainBranch } from '../git-exec.js';
import { helperCommand } from '../git-credential.js';
import { writeLink } from '../link.js';
import { printJson } from '../output.js';
import { crUrl } from './cr/shared.js';

export interface ShipOptions {
  f: Factory;
  host?: string;
  /** Project name on first run (default: the repository's directory name). */
  name?: string;
  /** CR title (default: the last commit's subject). */
  title?: string;
  json: boolean;
}

export const REMOTE = 'svc';
export const CR_ONLY = 'the default branch moves only through change requests: push a branch and open one with `svc cr open`';

export const builder = (y: Argv) =>
  withJson(
    withHost(
      y
        .option('name', { type: 'string', requiresArg: true, describe: 'Project name on first ship (default: the directory name)' })
        .option('title', { alias: 't', type: 'string', requiresArg: true, describe: "Title of the CR (default: the last commit's subject)" }),
    ),
  );

export const handler = (argv: Args, f: Factory) =>
  run({ f, host: str(argv.host), name: str(argv.name), title: str(argv.title), json: !!argv.json });

/**
 * `svc ship` (alias `deploy`): a git push to the project's repository, never an app
 * deployment. First run in an unlinked repository: create a managed project, link the
 * directory, add the `svc` remote (token through a credential helper, never in
 * .git/config) and push the default branch to create it. Later runs: push the current
 * branch and open its CR (or report the open one); the default branch itself is refused.
 */
export async function run(opts: ShipOptions): Promise<void> {
  const { f } = opts;
  const say = (s: string) => f.io.err.write(`${s}\n`);
  const top = await gitExec(f, ['rev-parse', '--show-toplevel']);
  if (top.code !== 0) throw new CliError('not inside a git repository', "run 'git init' here, or 'svc <name>' to start a new project");
  const root = top.stdout.trim();
  const branch = await currentBranch(root);
  if (!branch) throw new CliError('HEAD is not on a branch', 'switch to a branch first (git switch -c <name>)');
  if (!isPlainBranch(branch)) throw new CliError(`branch name "${branch}" cannot be shipped`);
  if ((await git(f, root, ['rev-parse', '--verify', '-q', 'HEAD^{commit}'])).code !== 0) {
    throw new CliError('nothing to ship: this repository has no commits yet', 'git add -A && git commit -m init');
  }
  const ctx = await hostContext(f, { json: opts.json, ...(opts.host ? { host: opts.host } : {}) });
  const project = ctx.link ? await ctx.api.getProject(ctx.link.link.project_id) : await createAndLink(f, ctx, root, branch, opts.name);
  if (!project.repo_url) throw new CliError(`project ${project.slug} has no repository`);
  await configureRemote(f, root, project.repo_url, ctx.host.name);

  const base = project.default_branch;
  const remoteBase = await git(f, root, ['ls-remote', '--heads', REMOTE, `refs/heads/${base}`]);
  if (remoteBase.code !== 0) throw new CliError(`cannot reach ${project.repo_url}`, lastLine(remoteBase.stderr));
  let created = false;
  if (remoteBase.stdout.trim() === '') {
    // The repository has no default branch yet: this push creates it (the one the server allows).
    const src = branch === base ? 'HEAD' : `refs/heads/${base}`;
    if (branch !== base && (await git(f, root, ['rev-parse', '--verify', '-q', `${src}^{commit}`])).code !== 0) {
      throw new CliError(`the project's default branch ${base} does not exist yet, here or there`, `git switch -c ${base} && svc ship`);
    }
    say(`Pushing ${base} to ${REMOTE} (${project.repo_url}), creating it...`);
    await push(f, root, src, base);
    created = true;
  }
  if (branch === base) {
    if (!created) throw new CliError(CR_ONLY, `git switch -c <topic> && svc ship`);
    say(`Shipped ${base} to ${project.slug}: ${project.repo_url}`);
    if (opts.json) return printJson(f.io, { project, change_request: null });
    f.io.out.write(`${project.repo_url}\n`);
    return;
  }
  say(`Pushing ${branch} to ${REMOTE}...`);
  await push(f, root, 'HEAD', branch);
  const cr = await openOrFind(f, ctx, project, branch, root, opts.title);
  if (opts.json) return printJson(f.io, { project, change_request: cr });
  f.io.out.write(`#${cr.number}\n${crUrl(f, ctx.host.url, cr)}\n`);
}

async function createAndLink(f: Factory, ctx: HostContext, root: string, branch: string, name?: string): Promise<Project> {
  const hasMain = (await git(f, root, ['rev-parse', '--verify', '-q', 'refs/heads/main'])).code === 0;
  const projectName = name ?? path.basename(root);
  f.io.err.write(`Creating project ${projectName} on ${ctx.host.name}...\n`);
  const project = await ctx.api.createProject({ name: projectName, default_branch: hasMain ? 'main' : branch });
  const file = await writeLink(root, { project_id: project.project_id, account_id: project.account_id, host: ctx.host.name, host_url: ctx.host.url });
  f.io.err.write(`Created ${project.slug} (${project.project_id}); linked ${path.relative(root, file)}\n`);
  return project;
}

/** `svc` remote at the repo URL; the credential helper answers for exactly that URL. */
async function configureRemote(f: Factory, root: string, url: string, hostName: string): Promise<void> {
  const u = new URL(url); // from the server; a URL, never an option
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new CliError(`unexpected repository URL ${url}`);
  const has = (await git(f, root, ['remote', 'get-url', REMOTE])).code === 0;
  await gitOk(f, root, has ? ['remote', 'set-url', REMOTE, u.href] : ['remote', 'add', REMOTE, u.href]);
  const key = `credential.${u.href}.helper`;
  // An empty value first: helpers configured before it (a keychain) are not asked for this URL.
  await gitOk(f, root, ['config', '--local', '--replace-all', key, '']);
  await gitOk(f, root, ['config', '--local', '--add', key, helperCommand(hostName)]);
}

async function push(f: Factory, root: string, src: string, branch: string): Promise<void> {
  const r = await gitExec(f, ['push', REMOTE, `${src}:refs/heads/${branch}`], { cwd: root, forward: f.io.err });
  if (r.code !== 0) throw new CliError(`git push to ${REMOTE} failed`, lastLine(r.stderr));
}

async function openOrFind(f: Factory, ctx: HostContext, project: Project, branch: string, root: string, title?: string): Promise<ChangeRequest> {
  const open = await ctx.api.listChangeRequests(project.project_id, 'open');
  const existing = open.find((c) => c.head_ref === branch && c.base_ref === project.default_branch);
  if (existing) {
    f.io.err.write(`CR #${existing.number} is already open for ${branch}; it now shows what you pushed\n`);
    return existing;
  }
  const subject = (await git(f, root, ['log', '-1', '--format=%s'])).stdout.trim();
  const cr = await ctx.api.createChangeRequest(project.project_id, { title: title || subject || branch, head_ref: branch, base_ref: project.default_branch });
  f.io.err.write(`Opened change request #${cr.number}: ${branch} → ${project.default_branch}\n`);
  return cr;
}

const git = (f: Factory, cwd: string, args: string[]) => gitExec(f, args, { cwd });

async function gitOk(f: Factory, cwd: string, args: string[]): Promise<void> {
  const r = await git(f, cwd, args);
  if (r.code !== 0) throw new CliError(`git ${args[0]} failed`, lastLine(r.stderr));
}

const lastLine = (s: string) => s.trim().split('\n').pop() ?? '';
