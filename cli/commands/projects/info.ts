import type { Argv } from 'yargs';
import type { Args } from '../../command-table.js';
import { projectContext } from '../../context.js';
import type { Factory } from '../../factory.js';
import { str, withHost, withJson } from '../../flags.js';
import { formatTime, printJson } from '../../output.js';

export interface ProjectsInfoOptions {
  f: Factory;
  project?: string;
  host?: string;
  json: boolean;
}

export const builder = (y: Argv) =>
  withJson(withHost(y.positional('project', { type: 'string', describe: 'Project id or slug (default: the linked project)' })));

export const handler = (argv: Args, f: Factory) => run({ f, project: str(argv.project), host: str(argv.host), json: !!argv.json });

export async function run({ f, project, host, json }: ProjectsInfoOptions): Promise<void> {
  const ctx = await projectContext(f, { json, ...(host ? { host } : {}), ...(project ? { project } : {}) });
  const p = await ctx.api.getProject(ctx.projectId);
  if (json) return printJson(f.io, p);
  const rows: Array<[string, string]> = [
    ['name', p.name],
    ['slug', p.slug],
    ['id', p.project_id],
    ['account', p.account_id],
    ['repo', p.repo_url ?? '(managed)'],
    ['default branch', p.default_branch],
    ['created', formatTime(f.io, p.created_at, f.now())],
  ];
  for (const [k, v] of rows) f.io.out.write(`${k}:\t${v}\n`);
}
