import type { Argv } from 'yargs';
import type { Args } from '../../command-table.js';
import { projectContext } from '../../context.js';
import { UsageError } from '../../errors.js';
import type { Factory } from '../../factory.js';
import { str, withHost, withProject } from '../../flags.js';
import { readStdin, secretsPath, validSecretName, type SecretsListing } from './shared.js';

export const builder = (y: Argv) =>
  withHost(withProject(y.positional('assignments', { type: 'string', array: true, describe: 'NAME=VALUE pairs; NAME=- reads the value from stdin' })));
export const handler = (argv: Args, f: Factory) =>
  run(f, { assignments: ((argv.assignments as unknown[]) ?? []).map(String), project: str(argv.project), host: str(argv.host) });

/** Upserts, one batch (all or nothing). Values are never printed. */
export async function run(f: Factory, o: { assignments: string[]; project?: string; host?: string }): Promise<void> {
  const set: Record<string, string> = {};
  let fromStdin: string | undefined;
  for (const a of o.assignments) {
    const eq = a.indexOf('=');
    if (eq <= 0) throw new UsageError(malformed(a, eq));
    const name = a.slice(0, eq);
    if (!validSecretName(name)) throw new UsageError(`invalid secret name "${name}": names match ^[A-Z_][A-Z0-9_]*$ and may not begin with SVC_`);
    if (name in set) throw new UsageError(`${name} is given twice`);
    let value = a.slice(eq + 1);
    if (value === '-') {
      if (fromStdin !== undefined) throw new UsageError('only one NAME=- can read stdin');
      if (f.io.stdinIsTTY) f.io.err.write(`Value for ${name} (end with Ctrl-D): `);
      value = await readStdin(f.io.in);
      fromStdin = name;
    }
    set[name] = value;
  }
  const ctx = await projectContext(f, { ...(o.host ? { host: o.host } : {}), ...(o.project ? { project: o.project } : {}) });
  const listing = await ctx.api.request<SecretsListing>('PATCH', secretsPath(ctx.projectId), { set });
  const names = Object.keys(set);
  f.io.err.write(`Set ${names.length} secret${names.length === 1 ? '' : 's'}: ${names.join(', ')} (revision ${listing.revision})\n`);
}

/**
 * The error for an argument that is not NAME=VALUE. It never echoes what may be a value:
 * a lone valid name is named back (names are not secret), anything else is described.
 */
function malformed(arg: string, eq: number): string {
  if (eq === 0) return `expected NAME=VALUE, got an argument with nothing before '=' (the value is not shown)`;
  if (validSecretName(arg)) return `expected NAME=VALUE, got "${arg}" without a value (use ${arg}=- to read it from stdin)`;
  return `expected NAME=VALUE, got an argument without '=' (not shown: it may be a value; use NAME=- to read a value from stdin)`;
}
