import type { Argv } from 'yargs';
import type { CrStack } from '../../../contracts/index.js';
import type { Args } from '../../command-table.js';
import type { Factory } from '../../factory.js';
import { printJson } from '../../output.js';
import { crTarget, crTargetOptions, openCrTarget, type CrTargetOptions } from './shared.js';

export const builder = (y: Argv) => crTarget(y);

export const handler = (argv: Args, f: Factory) => run(crTargetOptions(argv, f));

/**
 * `svc cr stack <cr>`: the chain, bottom first, one CR a line, indented by its depth, the
 * asked-for one marked; a note under a CR that waits for a person.
 */
export async function run(o: CrTargetOptions): Promise<void> {
  const { f, json } = o;
  const { crId, ctx } = await openCrTarget(o);
  const stack = await ctx.api.getStack(ctx.projectId, crId);
  if (json) return printJson(f.io, stack);
  f.io.out.write(renderStack(stack));
}

export function renderStack(s: CrStack): string {
  const depth = new Map<string, number>();
  const lines: string[] = [];
  for (const e of s.stack) {
    const cr = e.change_request;
    const d = e.parent_cr_id && depth.has(e.parent_cr_id) ? depth.get(e.parent_cr_id)! + 1 : 0;
    depth.set(cr.cr_id, d);
    const mark = cr.cr_id === s.cr_id ? '*' : ' ';
    lines.push(`${mark} ${'  '.repeat(d)}#${cr.number} ${cr.status}\t${cr.head_ref} -> ${cr.base_ref}\t${cr.title}`);
    if (e.note) lines.push(`  ${'  '.repeat(d)}  ${e.note}`);
  }
  return `${lines.join('\n')}\n`;
}
