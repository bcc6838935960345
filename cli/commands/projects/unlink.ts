import type { Args } from '../../command-table.js';
import { CliError } from '../../errors.js';
import type { Factory } from '../../factory.js';
import { findLink, removeLink } from '../../link.js';

export interface ProjectsUnlinkOptions {
  f: Factory;
}

export const handler = (_argv: Args, f: Factory) => run({ f });

/** Removes the nearest `.svc/link.json` (this directory or an ancestor). */
export async function run({ f }: ProjectsUnlinkOptions): Promise<void> {
  const found = await findLink(f.cwd);
  if (!found) throw new CliError('this directory is not linked to a project');
  await removeLink(found.file);
  f.io.err.write(`Unlinked (removed ${found.file})\n`);
}
