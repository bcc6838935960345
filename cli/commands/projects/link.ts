import type { Argv } from 'yargs';
import type { Args } from '../../command-table.js';
import { hostContext } from '../../context.js';
import { CliError, UsageError } from '../../errors.js';
import type { Factory } from '../../factory.js';
import { str, withHost } from '../../flags.js';
import { writeLink } from '../../link.js';

export interface ProjectsLinkOptions {
  f: Factory;
  project?: string;
  host?: string;
}

export const builder = (y: Argv) => withHost(y.positional('project', { type: 'string', describe: 'Project id or slug (no argument: pick one)' }));

export const handler = (argv: Args, f: Factory) => run({ f, project: str(argv.project), host: str(argv.host) });

/** Writes `.svc/link.json` in the current directory. */
export async function run({ f, project, host }: ProjectsLinkOptions): Promise<void> {
  const ctx = await hostContext(f, host ? { host } : {});
  let p;
  if (project) {
    p = await ctx.api.getProject(project);
  } else {
    if (!f.io.stdinIsTTY || !f.io.stdoutIsTTY) throw new UsageError('project id required when not running interactively');
    const projects = await ctx.api.listProjects();
    if (projects.length === 0) throw new CliError(`no projects on ${ctx.host.name}`);
    p = projects[await f.prompter.select('Which project should this directory be linked to?', projects.map((x) => `${x.slug}  ${x.name}`))]!;
  }
  const file = await writeLink(f.cwd, { project_id: p.project_id, account_id: p.account_id, host: ctx.host.name, host_url: ctx.host.url });
  f.io.err.write(`Linked ${f.cwd} to ${p.slug} (${p.project_id}) on ${ctx.host.name}\n`);
  f.io.err.write(`wrote ${file}\n`);
}
