import type { Args } from '../../command-table.js';
import { projectContext } from '../../context.js';
import type { Factory } from '../../factory.js';
import { str } from '../../flags.js';
import { formatTime, printJson } from '../../output.js';
import { slugTarget, triggersPath, type Trigger } from './shared.js';

export const builder = slugTarget;
export const handler = (argv: Args, f: Factory) => run(f, { slug: String(argv.slug), project: str(argv.project), host: str(argv.host), json: !!argv.json });

export async function run(f: Factory, o: { slug: string; project?: string; host?: string; json: boolean }): Promise<void> {
  const ctx = await projectContext(f, { json: o.json, ...(o.host ? { host: o.host } : {}), ...(o.project ? { project: o.project } : {}) });
  const { trigger: t } = await ctx.api.request<{ trigger: Trigger }>('GET', triggersPath(ctx.projectId, o.slug));
  if (o.json) return printJson(f.io, t);
  const rows: Array<[string, string]> = [
    ['slug', t.slug],
    ['schedule', t.schedule],
    ['enabled', String(t.enabled)],
    ['agent', t.agent ?? '(default)'],
    ['model', t.model ?? '(default)'],
    ['last fired', t.last_fired_at ? formatTime(f.io, t.last_fired_at, f.now()) : 'never'],
    ['next fire', t.next_fire_at ?? '(disabled)'],
  ];
  for (const [k, v] of rows) f.io.out.write(`${k}:\t${v}\n`);
  f.io.out.write(`prompt:\n${t.prompt.replace(/^/gm, '  ')}\n`);
  if (t.fires?.length) {
    f.io.out.write('recent fires:\n');
    for (const x of t.fires) f.io.out.write(`  ${x.fired_at}\t${x.kind}\t${x.outcome}${x.session_id ? `\t${x.session_id}` : ''}\n`);
  }
}
