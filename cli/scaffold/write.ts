/**
 * Writes the scaffold idempotently: a missing file is created, a file equal to its
 * template is left alone, and a file that differs (the user's edit) is kept unless
 * `force`. AGENTS.md may be the user's own: it gets the svc block appended once (found
 * again by its marker), never replaced, except that `force` restores a missing block.
 * `.svc/link.json` is never written here.
 */
import { chmod, mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { AGENTS_BLOCK, AGENTS_MARKER, AGENTS_MD, templates } from './templates.js';

export type Action = 'created' | 'unchanged' | 'kept' | 'restored' | 'appended';

export interface Written {
  path: string;
  action: Action;
}

async function readOrNull(file: string): Promise<string | null> {
  try {
    return await readFile(file, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw e;
  }
}

async function put(file: string, content: string, executable = false): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  await writeFile(tmp, content);
  if (executable) await chmod(tmp, 0o755);
  await rename(tmp, file);
}

export async function writeScaffold(root: string, opts: { force: boolean }): Promise<Written[]> {
  const out: Written[] = [];
  for (const t of templates()) {
    const file = path.join(root, t.path);
    const current = await readOrNull(file);
    if (current === null) {
      await put(file, t.content, t.executable);
      out.push({ path: t.path, action: 'created' });
    } else if (current === t.content) {
      if (t.executable) await chmod(file, 0o755);
      out.push({ path: t.path, action: 'unchanged' });
    } else if (opts.force) {
      await put(file, t.content, t.executable);
      out.push({ path: t.path, action: 'restored' });
    } else {
      out.push({ path: t.path, action: 'kept' });
    }
  }
  const agents = path.join(root, 'AGENTS.md');
  const current = await readOrNull(agents);
  if (current === null) {
    await put(agents, AGENTS_MD);
    out.push({ path: 'AGENTS.md', action: 'created' });
  } else if (current.includes(AGENTS_MARKER)) {
    out.push({ path: 'AGENTS.md', action: 'unchanged' });
  } else {
    await put(agents, `${current}${current.endsWith('\n') || current === '' ? '' : '\n'}\n${AGENTS_BLOCK}`);
    out.push({ path: 'AGENTS.md', action: 'appended' });
  }
  // The link file names this checkout's project and host: it is per machine, never committed
  // (a committed one would travel into CRs and vanish on a branch switch).
  const ignore = path.join(root, '.gitignore');
  const ignored = await readOrNull(ignore);
  if (ignored === null) {
    await put(ignore, `${LINK_IGNORE}\n`);
    out.push({ path: '.gitignore', action: 'created' });
  } else if (ignored.split(/\r?\n/).some((l) => l.trim() === LINK_IGNORE || l.trim() === '/' + LINK_IGNORE)) {
    out.push({ path: '.gitignore', action: 'unchanged' });
  } else {
    await put(ignore, `${ignored}${ignored.endsWith('\n') || ignored === '' ? '' : '\n'}${LINK_IGNORE}\n`);
    out.push({ path: '.gitignore', action: 'appended' });
  }
  return out;
}

const LINK_IGNORE = '.svc/link.json';
