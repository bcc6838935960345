/** `.svc/link.json`: ties a working directory (and everything below it) to one project. */
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { CliError } from './errors.js';

export interface LinkFile {
  project_id: string;
  account_id?: string;
  host?: string;
  host_url?: string;
}

export const LINK_REL = path.join('.svc', 'link.json');

/** The nearest link file in `cwd` or an ancestor, with its path. */
export async function findLink(cwd: string): Promise<{ file: string; link: LinkFile } | undefined> {
  let dir = path.resolve(cwd);
  for (;;) {
    const file = path.join(dir, LINK_REL);
    let text: string | undefined;
    try {
      text = await readFile(file, 'utf8');
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT' && code !== 'ENOTDIR') throw e;
    }
    if (text !== undefined) return { file, link: parseLink(text, file) };
    const parent = path.dirname(dir);
    if (parent === dir) return undefined;
    dir = parent;
  }
}

function parseLink(text: string, file: string): LinkFile {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    throw new CliError(`${file} is not valid JSON`, "run 'svc projects link' again");
  }
  const o = (raw ?? {}) as Record<string, unknown>;
  if (typeof o.project_id !== 'string' || !o.project_id) throw new CliError(`${file} has no project_id`, "run 'svc projects link' again");
  const link: LinkFile = { project_id: o.project_id };
  if (typeof o.account_id === 'string') link.account_id = o.account_id;
  if (typeof o.host === 'string') link.host = o.host;
  if (typeof o.host_url === 'string') link.host_url = o.host_url;
  return link;
}

export async function writeLink(dir: string, link: LinkFile): Promise<string> {
  const file = path.join(dir, LINK_REL);
  await mkdir(path.dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  await writeFile(tmp, JSON.stringify(link, null, 2) + '\n');
  await rename(tmp, file);
  return file;
}

export async function removeLink(file: string): Promise<void> {
  await rm(file, { force: true });
}
