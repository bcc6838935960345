import type { Argv } from 'yargs';
import type { Args } from '../../command-table.js';
import { hostContext } from '../../context.js';
import type { Factory } from '../../factory.js';
import { str, withHost, withJson } from '../../flags.js';
import { colors, formatTime, printJson, printTable } from '../../output.js';

export interface ProjectsLsOptions {
  f: Factory;
  host?: string;
  json: boolean;
}

export const builder = (y: Argv) => withJson(withHost(y));

export const handler = (argv: Args, f: Factory) => run({ f, host: str(argv.host), json: !!argv.json });

export async function run({ f, host, json }: ProjectsLsOptions): Promise<void> {
  const ctx = await hostContext(f, { json, ...(host ? { host } : {}) });
  const projects = await ctx.api.listProjects();
  if (json) return printJson(f.io, projects);
  if (projects.length === 0) {
    f.io.err.write('No projects.\n');
    return;
  }
  const linked = ctx.link?.link.project_id;
  const c = colors(f.io, f.env);
  printTable(
    f.io,
    ['slug', 'name', 'default branch', 'id', 'created'],
    projects.map((p) => [
      p.project_id === linked && f.io.stdoutIsTTY ? `${p.slug} ${c.green('(linked)')}` : p.slug,
      p.name,
      p.default_branch,
      p.project_id,
      formatTime(f.io, p.created_at, f.now()),
    ]),
    c,
  );
}
