import type { Argv } from 'yargs';
import type { Args } from '../../command-table.js';
import { projectContext } from '../../context.js';
import type { Factory } from '../../factory.js';
import { str, withHost, withProject } from '../../flags.js';
import { channelsApi } from './shared.js';

export const builder = (y: Argv) => withHost(withProject(y)).positional('channel', { type: 'string', describe: 'Channel id (see svc channels ls)' });

export const handler = async (argv: Args, f: Factory) => {
  const project = str(argv.project);
  const host = str(argv.host);
  const ctx = await projectContext(f, { ...(host ? { host } : {}), ...(project ? { project } : {}) });
  await channelsApi(ctx.api).remove(ctx.projectId, String(argv.channel));
  f.io.err.write(`Removed channel ${String(argv.channel)}\n`);
};
