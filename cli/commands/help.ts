import type { Argv } from 'yargs';
import { TOP, findSpec, isGroup } from '../command-table.js';
import { UsageError } from '../errors.js';
import type { Args } from '../command-table.js';
import type { Factory } from '../factory.js';
import { groupHelp, treeHelp } from '../help.js';

export const builder = (y: Argv) => y.positional('command', { type: 'string', array: true, describe: 'Command to show help for' });

/** `svc help` prints the whole tree; `svc help cr` one group; `svc help cr ls` a command's flags. */
export async function handler(argv: Args, f: Factory): Promise<void> {
  const words = ((argv.command as string[] | undefined) ?? []).map(String);
  if (words.length === 0) {
    f.io.out.write(treeHelp());
    return;
  }
  const top = findSpec(TOP, words[0]!);
  if (!top) throw new UsageError(`unknown command "${words[0]}" for "svc"`);
  if (isGroup(top) && words.length === 1) {
    f.io.out.write(groupHelp(top));
    return;
  }
  if (isGroup(top) && !findSpec(top.children, words[1]!)) throw new UsageError(`unknown command "${words[1]}" for "svc ${top.name}"`);
  // A leaf's flags live in its module: let the normal path render them.
  const { main } = await import('../app.js');
  await main([...words.slice(0, isGroup(top) ? 2 : 1), '--help'], f);
}
