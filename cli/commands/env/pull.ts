import { access, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Argv } from 'yargs';
import type { Args } from '../../command-table.js';
import { projectContext } from '../../context.js';
import { CliError } from '../../errors.js';
import type { Factory } from '../../factory.js';
import { str, withHost, withProject } from '../../flags.js';
import { secretsPath, type SecretsListing } from '../secrets/shared.js';

export const builder = (y: Argv) =>
  withHost(withProject(y.option('out', { type: 'string', default: '.env', requiresArg: true, describe: 'File to write' }).option('force', { type: 'boolean', describe: 'Overwrite an existing file' })));
export const handler = (argv: Args, f: Factory) => run(f, { out: String(argv.out), force: !!argv.force, project: str(argv.project), host: str(argv.host) });

/** A skeleton: every name the project knows (set secrets and the manifest's [env]), values blank. */
export async function run(f: Factory, o: { out: string; force: boolean; project?: string; host?: string }): Promise<void> {
  const file = path.resolve(f.cwd, o.out);
  const exists = () => new CliError(`${o.out} already exists`, 'pass --force to overwrite it');
  if (!o.force && (await access(file).then(() => true, () => false))) throw exists();
  const ctx = await projectContext(f, { ...(o.host ? { host: o.host } : {}), ...(o.project ? { project: o.project } : {}) });
  const listing = await ctx.api.request<SecretsListing>('GET', secretsPath(ctx.projectId));
  const described = new Map<string, string>();
  for (const e of [...listing.env.optional, ...listing.env.required]) described.set(e.name, e.description);
  const required = new Set(listing.env.required.map((e) => e.name));
  const names = [...new Set([...listing.secrets.map((s) => s.name), ...described.keys()])].sort();
  let text = '# Written by `svc env pull`: names only, values left blank. Fill in, then `svc env push --from <file>`.\n';
  for (const n of names) {
    const notes = [required.has(n) ? 'required' : '', described.get(n) ?? ''].filter(Boolean).join(': ');
    if (notes) text += `# ${notes.replace(/\n/g, ' ')}\n`;
    text += `${n}=\n`;
  }
  try {
    await writeFile(file, text, { flag: o.force ? 'w' : 'wx', mode: 0o600 });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'EEXIST') throw exists();
    throw e;
  }
  f.io.err.write(`Wrote ${names.length} name${names.length === 1 ? '' : 's'} to ${o.out}\n`);
}
