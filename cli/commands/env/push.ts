import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { Argv } from 'yargs';
import type { Args } from '../../command-table.js';
import { projectContext } from '../../context.js';
import { CliError } from '../../errors.js';
import type { Factory } from '../../factory.js';
import { str, withHost, withProject } from '../../flags.js';
import { DotenvError, parseDotenv } from '../../dotenv.js';
import { secretsPath, validSecretName, type SecretsListing } from '../secrets/shared.js';

export const builder = (y: Argv) =>
  withHost(withProject(y.option('from', { type: 'string', demandOption: true, requiresArg: true, describe: 'dotenv file to upload' })));
export const handler = (argv: Args, f: Factory) => run(f, { from: String(argv.from), project: str(argv.project), host: str(argv.host) });

/** Every NAME=VALUE of the file as a secret, in one batch; a bad line uploads nothing. */
export async function run(f: Factory, o: { from: string; project?: string; host?: string }): Promise<void> {
  const text = await readFile(path.resolve(f.cwd, o.from), 'utf8').catch((e: NodeJS.ErrnoException) => {
    throw new CliError(`cannot read ${o.from}: ${e.code ?? e.message}`);
  });
  let entries: Array<[string, string]>;
  try {
    entries = parseDotenv(text);
  } catch (e) {
    if (e instanceof DotenvError) throw new CliError(`${o.from}: ${e.message}; nothing was uploaded`);
    throw e;
  }
  const bad = entries.filter(([n]) => !validSecretName(n)).map(([n]) => n);
  if (bad.length) throw new CliError(`${o.from}: invalid secret name${bad.length > 1 ? 's' : ''} ${bad.join(', ')} (^[A-Z_][A-Z0-9_]*$, no SVC_ prefix); nothing was uploaded`);
  // Blank values (a pulled skeleton not filled in) are skipped, not uploaded as empty secrets.
  const set = Object.fromEntries(entries.filter(([, v]) => v !== ''));
  const skipped = entries.filter(([, v]) => v === '').map(([n]) => n);
  if (Object.keys(set).length === 0) throw new CliError(`${o.from}: no values to upload${skipped.length ? ` (${skipped.length} blank)` : ''}`);
  const ctx = await projectContext(f, { ...(o.host ? { host: o.host } : {}), ...(o.project ? { project: o.project } : {}) });
  const listing = await ctx.api.request<SecretsListing>('PATCH', secretsPath(ctx.projectId), { set });
  f.io.err.write(`Uploaded ${Object.keys(set).length} secret${Object.keys(set).length === 1 ? '' : 's'}: ${Object.keys(set).join(', ')} (revision ${listing.revision})${skipped.length ? `; skipped blank: ${skipped.join(', ')}` : ''}\n`);
}
