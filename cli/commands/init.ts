import { mkdir, readdir, realpath } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Argv } from 'yargs';
import type { Args } from '../command-table.js';
import { CliError, UsageError } from '../errors.js';
import type { Factory } from '../factory.js';
import { str, withJson } from '../flags.js';
import { gitExec } from '../git-exec.js';
import { printJson } from '../output.js';
import { findLink } from '../link.js';
import { writeScaffold, type Written } from '../scaffold/write.js';

export interface InitOptions {
  f: Factory;
  /** `svc <name>` / `svc init <name>`: scaffold a new directory of that name. */
  name?: string;
  force: boolean;
  json: boolean;
}

export const builder = (y: Argv) =>
  withJson(
    y
      .positional('name', { type: 'string', describe: 'Create this new directory (with git init) and scaffold it' })
      .option('force', { type: 'boolean', describe: 'Restore files you edited to the template' }),
  );

export const handler = (argv: Args, f: Factory) => run({ f, name: str(argv.name), force: !!argv.force, json: !!argv.json });

/** A directory name people type: letters, digits, `.`, `_`, `-`; not `.`/`..`, no path. */
export const PROJECT_NAME = /^(?!\.{1,2}$)[A-Za-z0-9._][A-Za-z0-9._-]{0,99}$/;

export async function run(opts: InitOptions): Promise<void> {
  const { f } = opts;
  let root = f.cwd;
  let created = false;
  if (opts.name !== undefined) {
    if (!PROJECT_NAME.test(opts.name)) throw new UsageError(`invalid project name "${opts.name}": use letters, digits, '.', '_' and '-'`);
    root = path.join(f.cwd, opts.name);
    const entries = await readdir(root).catch((e: NodeJS.ErrnoException) => {
      if (e.code === 'ENOENT') return null;
      throw e;
    });
    if (entries && entries.length > 0) throw new CliError(`${root} already exists and is not empty`, `cd ${opts.name} && svc init`);
    await mkdir(root, { recursive: true });
    created = true;
    const g = await gitExec(f, ['init', '-q', '-b', 'main'], { cwd: root });
    if (g.code !== 0) throw new CliError(`git init failed: ${g.stderr.trim()}`);
  }
  // `svc init` in a directory that is not a repository yet makes it one (svc ship pushes it).
  if (!created && (await gitExec(f, ['rev-parse', '--is-inside-work-tree'], { cwd: root })).code !== 0) {
    const g = await gitExec(f, ['init', '-q', '-b', 'main'], { cwd: root });
    if (g.code !== 0) throw new CliError(`git init failed: ${g.stderr.trim()}`);
    f.io.err.write(`initialized a git repository in ${root}\n`);
  }
  else if (!created) {
    // Inside a bigger repository, `git add` and `svc ship` act on that one: say so.
    const top = await gitExec(f, ['rev-parse', '--show-toplevel'], { cwd: root });
    if (top.code === 0 && (await realpath(top.stdout.trim()).catch(() => top.stdout.trim())) !== (await realpath(root).catch(() => root))) {
      f.io.err.write(`note: ${root} is inside the git repository ${top.stdout.trim()}; commits and svc ship act on that repository\n`);
    }
  }
  const written = await writeScaffold(root, { force: opts.force });
  if (opts.json) return printJson(f.io, { root, files: written });
  report(f, written);
  if (created) f.io.err.write(`\nNext: cd ${opts.name} && git add -A && git commit -m init && svc ship\n`);
  else if (written.some((w) => w.action !== 'unchanged')) f.io.err.write(`\nNext: ${await nextSteps(f, root)}\n`);
}

/**
 * The next steps by the kind of repository this is, as the README's step 3 says: a clone
 * of a repository that is not the server's (a path on this machine, or a git host) is
 * pushed there and becomes a project with `svc projects create --repo-url`; a directory
 * with no remote, or one `svc ship` already set up, ships to a managed repository.
 */
/** A remote's URL as printed: a token in it stays out of the terminal (svc projects create takes it again if needed). */
function withoutPassword(url: string): string {
  try {
    const u = new URL(url);
    if (!u.password) return url;
    u.password = '';
    return u.href;
  } catch {
    return url;
  }
}

async function nextSteps(f: Factory, root: string): Promise<string> {
  const commit = 'git add -A && git commit -m "svc init"';
  const remote = async (name: string) => {
    const r = await gitExec(f, ['remote', 'get-url', name], { cwd: root });
    return r.code === 0 ? r.stdout.trim() : null;
  };
  const origin = await remote('origin');
  if (origin === null || (await remote('svc')) !== null || (await findLink(root))) return `${commit} && svc ship`;
  const local = path.isAbsolute(origin) || /^file:/i.test(origin);
  const repoUrl = local && !/^file:/i.test(origin) ? pathToFileURL(origin).href : withoutPassword(origin);
  const name = path.basename(origin.replace(/\/+$/, '')).replace(/\.git$/, '').toLowerCase().replace(/[^a-z0-9-]+/g, '-').replace(/^-+|-+$/g, '') || 'project';
  return [
    `${commit} && git push origin HEAD:main   # the default branch must exist before sessions start`,
    `      svc projects create ${name} --repo-url "${repoUrl}"${local ? '   # the server needs SVC_ALLOW_FILE_REPOS=1' : ''}`,
    `      svc projects link ${name}`,
  ].join('\n');
}

function report(f: Factory, written: Written[]): void {
  for (const w of written) {
    const note = w.action === 'kept' ? ' (you edited it; --force restores the template)' : '';
    f.io.err.write(`${w.action.padEnd(9)} ${w.path}${note}\n`);
  }
  const changed = written.filter((w) => w.action !== 'unchanged' && w.action !== 'kept').length;
  f.io.err.write(changed ? `svc init: ${changed} file(s) written\n` : 'svc init: nothing to do, everything is in place\n');
}
