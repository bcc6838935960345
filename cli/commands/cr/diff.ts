import type { Argv } from 'yargs';
import type { Args } from '../../command-table.js';
import { parseCrRef, projectContext } from '../../context.js';
import type { Factory } from '../../factory.js';
import { str } from '../../flags.js';
import { colors, printJson, type Colors } from '../../output.js';
import { crTarget } from './shared.js';
import type { Diff, DiffFile } from '../../../contracts/change-requests.js';

export interface CrDiffOptions {
  f: Factory;
  cr: string;
  color: boolean;
  project?: string;
  host?: string;
  json: boolean;
}

export const builder = (y: Argv) => crTarget(y).option('color', { type: 'boolean', default: true, describe: 'Colorize on a terminal (--no-color: never)' });

export const handler = (argv: Args, f: Factory) =>
  run({ f, cr: String(argv.cr), color: argv.color !== false, project: str(argv.project), host: str(argv.host), json: !!argv.json });

/** The unified patch: colored on a terminal, through the pager; plain when piped. */
export async function run({ f, cr: ref, color, project, host, json }: CrDiffOptions): Promise<void> {
  const crId = parseCrRef(ref);
  const ctx = await projectContext(f, { json, ...(host ? { host } : {}), ...(project ? { project } : {}) });
  const diff = await ctx.api.getDiff(ctx.projectId, crId);
  if (json) return printJson(f.io, diff);
  const cut = truncationNote(diff);
  if (!diff.patch) {
    f.io.err.write(cut ?? 'No changes.\n');
    return;
  }
  const c = colors(f.io, f.env, !color);
  const text = c.enabled ? colorize(diff.patch, c) : diff.patch;
  const body = text.endsWith('\n') ? text : text + '\n';
  if (f.io.stdoutIsTTY && f.io.withPager) await f.io.withPager(f.env, (out) => out.write(body));
  else f.io.out.write(body);
  if (cut) f.io.err.write(cut);
}

/** The parts of the contract's diff that say what the server's limits left out. */
type TruncatedDiff = Pick<Diff, 'truncated' | 'files_truncated' | 'total_files'> & { files: Array<Pick<DiffFile, 'path' | 'additions' | 'deletions' | 'patch_truncated'>> };

/** What the server's diff limits left out, for stderr; null when nothing was. */
export function truncationNote(diff: TruncatedDiff): string | null {
  if (!diff.truncated) return null;
  const cut = diff.files.filter((x) => x.patch_truncated);
  const lines = cut.slice(0, 20).map((x) => `  ${x.path} (+${x.additions} -${x.deletions})\n`);
  if (cut.length > 20) lines.push(`  ... and ${cut.length - 20} more\n`);
  const more = diff.files_truncated ? ` Only ${diff.files.length} of ${diff.total_files ?? '?'} changed files are listed.` : '';
  return `note: the diff is over the server's limits; ${cut.length} file(s) shown without their patch:${more}\n${lines.join('')}`;
}

export function colorize(patch: string, c: Colors): string {
  return patch
    .split('\n')
    .map((line) => {
      if (/^(diff --git|index |--- |\+\+\+ |new file mode|deleted file mode|similarity index|rename (from|to) |Binary files)/.test(line)) return c.bold(line);
      if (line.startsWith('@@')) return c.cyan(line);
      if (line.startsWith('+')) return c.green(line);
      if (line.startsWith('-')) return c.red(line);
      return line;
    })
    .join('\n');
}
