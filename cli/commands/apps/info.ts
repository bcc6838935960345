import type { Argv } from 'yargs';
import type { Args } from '../../command-table.js';
import { projectContext } from '../../context.js';
import type { Factory } from '../../factory.js';
import { str, withHost, withJson, withProject } from '../../flags.js';
import { formatTime, printJson, shortSha } from '../../output.js';
import { appsPath, type App } from './ls.js';

export const builder = (y: Argv) => withJson(withHost(withProject(y.positional('name', { type: 'string', describe: 'App name' }))));
export const handler = (argv: Args, f: Factory) => run(f, { name: String(argv.name), project: str(argv.project), host: str(argv.host), json: !!argv.json });

export async function run(f: Factory, o: { name: string; project?: string; host?: string; json: boolean }): Promise<void> {
  const ctx = await projectContext(f, { json: o.json, ...(o.host ? { host: o.host } : {}), ...(o.project ? { project: o.project } : {}) });
  const { app: a } = await ctx.api.request<{ app: App }>('GET', appsPath(ctx.projectId, o.name));
  if (o.json) return printJson(f.io, a);
  const rows: Array<[string, string]> = [
    ['name', a.name],
    ['status', a.status],
    ['url', a.url ?? ''],
    ['commit', a.commit_sha ?? ''],
    ['deployed', formatTime(f.io, a.deployed_at, f.now())],
    ['manifest hash', a.manifest_hash.slice(0, 12)],
  ];
  if (a.last_error) rows.push(['last error', a.last_error]);
  for (const [k, v] of rows) f.io.out.write(`${k}:\t${v}\n`);
  if (a.deploys?.length) {
    f.io.out.write('recent deploys:\n');
    for (const d of a.deploys) f.io.out.write(`  ${d.started_at}\t${shortSha(d.commit_sha)}\t${d.status}${d.error ? `\t${d.error}` : ''}\n`);
  }
}
