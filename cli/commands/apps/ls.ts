import type { Argv } from 'yargs';
import type { App as AppJson, AppDetail } from '../../../contracts/manifest.js';
import type { Args } from '../../command-table.js';
import { projectContext } from '../../context.js';
import type { Factory } from '../../factory.js';
import { str, withHost, withJson, withProject } from '../../flags.js';
import { colors, formatTime, printJson, printTable, shortSha } from '../../output.js';

/** An app as listed, or as shown alone (with its recent deploys). */
export type App = AppJson & Partial<Pick<AppDetail, 'deploys'>>;

export const appsPath = (project: string, name?: string) => `/projects/${encodeURIComponent(project)}/apps${name === undefined ? '' : `/${encodeURIComponent(name)}`}`;

export const builder = (y: Argv) => withJson(withHost(withProject(y)));
export const handler = (argv: Args, f: Factory) => run(f, { project: str(argv.project), host: str(argv.host), json: !!argv.json });

export async function run(f: Factory, o: { project?: string; host?: string; json: boolean }): Promise<void> {
  const ctx = await projectContext(f, { json: o.json, ...(o.host ? { host: o.host } : {}), ...(o.project ? { project: o.project } : {}) });
  const { apps } = await ctx.api.request<{ apps: App[] }>('GET', appsPath(ctx.projectId));
  if (o.json) return printJson(f.io, apps);
  if (apps.length === 0) {
    f.io.err.write('No apps: add [[apps]] to svc.toml through a change request.\n');
    return;
  }
  const c = colors(f.io, f.env);
  printTable(
    f.io,
    ['name', 'status', 'commit', 'url', 'deployed'],
    apps.map((a) => [a.name, f.io.stdoutIsTTY && a.status === 'failed' ? c.red(a.status) : a.status, shortSha(a.commit_sha), a.url ?? '', formatTime(f.io, a.deployed_at, f.now())]),
    c,
  );
}
