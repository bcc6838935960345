import type { Argv } from 'yargs';
import type { Args } from '../../command-table.js';
import { projectContext } from '../../context.js';
import { UsageError } from '../../errors.js';
import type { Factory } from '../../factory.js';
import { str, withHost, withProject } from '../../flags.js';
import { secretsPath, validSecretName, type SecretsListing } from './shared.js';

export const builder = (y: Argv) => withHost(withProject(y.positional('names', { type: 'string', array: true, describe: 'Secret names' })));
export const handler = (argv: Args, f: Factory) => run(f, { names: ((argv.names as unknown[]) ?? []).map(String), project: str(argv.project), host: str(argv.host) });

export async function run(f: Factory, o: { names: string[]; project?: string; host?: string }): Promise<void> {
  for (const n of o.names) if (!validSecretName(n)) throw new UsageError(`invalid secret name "${n}"`);
  const ctx = await projectContext(f, { ...(o.host ? { host: o.host } : {}), ...(o.project ? { project: o.project } : {}) });
  const listing = await ctx.api.request<SecretsListing>('PATCH', secretsPath(ctx.projectId), { unset: o.names });
  f.io.err.write(`Unset ${o.names.join(', ')} (revision ${listing.revision})\n`);
}
