import type { Argv } from 'yargs';
import type { Args } from '../../command-table.js';
import { dashboardUrl, projectContext } from '../../context.js';
import type { Factory } from '../../factory.js';
import { str, withHost } from '../../flags.js';

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
  const url = `${dashboardUrl(f, ctx.host.url)}/projects/${p.project_id}`;
  if (f.io.stdinIsTTY && f.io.stdoutIsTTY && !f.env.CI) {
    f.io.err.write(`Opening ${url} in your browser.\n`);
    try {
      await f.openBrowser(url);
      return;
    } catch {
      f.io.err.write('(could not open a browser)\n');
    }
  }
  f.io.out.write(`${url}\n`);
}
