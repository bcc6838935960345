import type { Argv } from 'yargs';
import type { Args } from '../../command-table.js';
import { projectContext } from '../../context.js';
import type { Factory } from '../../factory.js';
import { str, withHost, withJson, withProject } from '../../flags.js';
import { colors, formatTime, printJson, printTable } from '../../output.js';
import { triggersPath, type Trigger } from './shared.js';

export const builder = (y: Argv) => withJson(withHost(withProject(y)));
export const handler = (argv: Args, f: Factory) => run(f, { project: str(argv.project), host: str(argv.host), json: !!argv.json });

export async function run(f: Factory, o: { project?: string; host?: string; json: boolean }): Promise<void> {
  const ctx = await projectContext(f, { json: o.json, ...(o.host ? { host: o.host } : {}), ...(o.project ? { project: o.project } : {}) });
  const { triggers } = await ctx.api.request<{ triggers: Trigger[] }>('GET', triggersPath(ctx.projectId));
  if (o.json) return printJson(f.io, triggers);
  if (triggers.length === 0) {
    f.io.err.write('No triggers: add [[triggers]] to svc.toml through a change request.\n');
    return;
  }
  const c = colors(f.io, f.env);
  printTable(
    f.io,
    ['slug', 'schedule', 'enabled', 'last fired', 'next fire'],
    triggers.map((t) => [
      t.slug,
      t.schedule,
      f.io.stdoutIsTTY ? (t.enabled ? c.green('yes') : c.dim('no')) : String(t.enabled),
      t.last_fired_at ? formatTime(f.io, t.last_fired_at, f.now()) : f.io.stdoutIsTTY ? 'never' : '',
      t.next_fire_at ?? '',
    ]),
    c,
  );
}
