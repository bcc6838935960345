import type { Argv } from 'yargs';
import type { Args } from '../../command-table.js';
import { projectContext } from '../../context.js';
import type { Factory } from '../../factory.js';
import { str, withHost, withJson, withProject } from '../../flags.js';
import { colors, formatTime, printJson, printTable } from '../../output.js';
import { secretsPath, type SecretsListing } from './shared.js';

export const builder = (y: Argv) => withJson(withHost(withProject(y)));
export const handler = (argv: Args, f: Factory) => run(f, { project: str(argv.project), host: str(argv.host), json: !!argv.json });

/** Names (never values) with the manifest's [env] spec; required-but-missing marked. */
export async function run(f: Factory, o: { project?: string; host?: string; json: boolean }): Promise<void> {
  const ctx = await projectContext(f, { json: o.json, ...(o.host ? { host: o.host } : {}), ...(o.project ? { project: o.project } : {}) });
  const listing = await ctx.api.request<SecretsListing>('GET', secretsPath(ctx.projectId));
  if (o.json) return printJson(f.io, listing);
  const c = colors(f.io, f.env);
  const set = new Map(listing.secrets.map((s) => [s.name, s.updated_at]));
  const spec = new Map<string, { kind: string; description: string }>();
  for (const e of listing.env.optional) spec.set(e.name, { kind: 'optional', description: e.description });
  for (const e of listing.env.required) spec.set(e.name, { kind: 'required', description: e.description });
  const names = [...new Set([...set.keys(), ...spec.keys()])].sort();
  if (names.length === 0) {
    f.io.err.write('No secrets, and the manifest declares no [env].\n');
    return;
  }
  const rows = names.map((n) => {
    const s = spec.get(n);
    const state = set.has(n) ? 'set' : s?.kind === 'required' ? 'MISSING' : 'not set';
    const shown = f.io.stdoutIsTTY ? (state === 'MISSING' ? c.red(state) : state === 'set' ? c.green(state) : c.dim(state)) : state.toLowerCase();
    return [n, shown, s?.kind ?? '', set.has(n) ? formatTime(f.io, set.get(n), f.now()) : '', s?.description ?? ''];
  });
  printTable(f.io, ['name', 'status', 'spec', 'updated', 'description'], rows, c);
  if (listing.env.missing.length && f.io.stdoutIsTTY) {
    f.io.err.write(`${listing.env.missing.length} required secret${listing.env.missing.length === 1 ? '' : 's'} missing: svc secrets set ${listing.env.missing[0]}=-\n`);
  }
}
