import type { Argv } from 'yargs';
import type { Args } from '../../command-table.js';
import { dashboardUrl, projectContext } from '../../context.js';
import type { Factory } from '../../factory.js';
import { str, withHost } from '../../flags.js';
import { openOrPrint } from '../../browser.js';

export interface ProjectsOpenOptions {
  f: Factory;
  project?: string;
  host?: string;
}

export const builder = (y: Argv) => withHost(y.positional('project', { type: 'string', describe: 'Project id or slug (default: the linked project)' }));

export const handler = (argv: Args, f: Factory) => run({ f, project: str(argv.project), host: str(argv.host) });

/** Opens the project's dashboard page on a terminal; prints the URL otherwise (and under CI). */
export async function run({ f, project, host }: ProjectsOpenOptions): Promise<void> {
  const ctx = await projectContext(f, { ...(host ? { host } : {}), ...(project ? { project } : {}) });
  const p = await ctx.api.getProject(ctx.projectId);
  await openOrPrint(f, `${dashboardUrl(f, ctx.host.url)}/projects/${p.project_id}`);
}
