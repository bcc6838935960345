import type { Argv } from 'yargs';
import type { Args } from '../../command-table.js';
import { projectContext } from '../../context.js';
import type { Factory } from '../../factory.js';
import { str, withHost, withJson, withProject } from '../../flags.js';
import { colors, formatTime, printJson, printTable } from '../../output.js';
import { channelsApi } from './shared.js';

export const builder = (y: Argv) => withJson(withHost(withProject(y)));

export const handler = async (argv: Args, f: Factory) => {
  const project = str(argv.project);
  const host = str(argv.host);
  const json = !!argv.json;
  const ctx = await projectContext(f, { json, ...(host ? { host } : {}), ...(project ? { project } : {}) });
  const channels = await channelsApi(ctx.api).list(ctx.projectId);
  if (json) return printJson(f.io, channels);
  if (channels.length === 0) {
    f.io.err.write("No channels. Add one with 'svc channels add slack --webhook-url <url>'.\n");
    return;
  }
  const c = colors(f.io, f.env);
  printTable(
    f.io,
    ['id', 'kind', 'webhook', 'delivered', 'last error', 'created'],
    channels.map((ch) => [
      ch.channel_id,
      ch.kind,
      ch.webhook,
      String(ch.delivered_count),
      ch.last_error ?? '',
      formatTime(f.io, ch.created_at, f.now()),
    ]),
    c,
  );
};
