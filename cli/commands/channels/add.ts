import type { Argv } from 'yargs';
import type { Args } from '../../command-table.js';
import { projectContext } from '../../context.js';
import { UsageError } from '../../errors.js';
import type { Factory } from '../../factory.js';
import { str, withHost, withJson, withProject } from '../../flags.js';
import { printJson } from '../../output.js';
import { channelsApi } from './shared.js';

export const builder = (y: Argv) =>
  withJson(withHost(withProject(y)))
    .positional('kind', { type: 'string', describe: 'Chat kind: slack' })
    .option('webhook-url', { type: 'string', describe: 'Incoming webhook URL of the channel', requiresArg: true });

export const handler = async (argv: Args, f: Factory) => {
  const kind = String(argv.kind);
  if (kind !== 'slack') throw new UsageError(`unknown channel kind "${kind}": want slack`);
  const url = str(argv['webhook-url']);
  if (!url) throw new UsageError('missing --webhook-url <url>');
  const project = str(argv.project);
  const host = str(argv.host);
  const json = !!argv.json;
  const ctx = await projectContext(f, { json, ...(host ? { host } : {}), ...(project ? { project } : {}) });
  const channel = await channelsApi(ctx.api).add(ctx.projectId, kind, url);
  if (json) return printJson(f.io, channel);
  f.io.out.write(`${channel.channel_id}\n`);
  f.io.err.write(`Connected ${kind} channel ${channel.webhook}: CR opened/merged/closed and session running/failed will be posted there\n`);
};
