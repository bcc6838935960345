import type { Argv } from 'yargs';
import type { Args } from '../../command-table.js';
import { hostContext } from '../../context.js';
import type { Factory } from '../../factory.js';
import { str, withHost, withJson } from '../../flags.js';
import { printJson } from '../../output.js';

export interface ProjectsCreateOptions {
  f: Factory;
  name: string;
  repoUrl?: string;
  defaultBranch?: string;
  host?: string;
  json: boolean;
}

export const builder = (y: Argv) =>
  withJson(
    withHost(
      y
        .positional('name', { type: 'string', describe: 'Project name' })
        .option('repo-url', { type: 'string', describe: 'Repository to work on (default: the server makes a managed one)' })
        .option('default-branch', { type: 'string', describe: 'Default branch (default: main)' }),
    ),
  );

export const handler = (argv: Args, f: Factory) =>
  run({ f, name: String(argv.name), repoUrl: str(argv['repo-url']), defaultBranch: str(argv['default-branch']), host: str(argv.host), json: !!argv.json });

/** `POST /v1/projects`: the server validates the URL and branch; its 4xx message is the CLI's error. */
export async function run({ f, name, repoUrl, defaultBranch, host, json }: ProjectsCreateOptions): Promise<void> {
  const ctx = await hostContext(f, { json, ...(host ? { host } : {}) });
  const p = await ctx.api.createProject({ name, ...(repoUrl ? { repo_url: repoUrl } : {}), ...(defaultBranch ? { default_branch: defaultBranch } : {}) });
  if (json) return printJson(f.io, p);
  f.io.err.write(`Created project ${p.slug} (${p.project_id})\n`);
  if (p.repo_url) f.io.out.write(`${p.repo_url}\n`);
}
