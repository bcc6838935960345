import { execFile } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { lstat, mkdir, readdir, readFile, realpath, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { decodeFrame, encodeFrame, FRAME_CONTENT_TYPE, type ArchivedFile } from '../lib/checkpoint-frame.js';
import type { Logger } from '../lib/logger.js';
import { git, runGit } from './git.js';

/**
 * Pause and resume, the sandbox's half (docs/sessions.md "Pause and resume"). A checkpoint
 * is what the session branch does not hold: the workspace's tracked changes and untracked
 * files (ignored files excluded), each kept while the total stays under the cap and listed
 * as skipped otherwise, as one commit (its parent: the local HEAD, so unpushed commits
 * come too), plus the runtime's conversation (opencode's database under its data dir; its
 * auth files never). The workspace's own index and refs are never touched: the commit is
 * built with a scratch index and bundled from a scratch repository that borrows the
 * workspace's objects. Restoring is the reverse, here in the sandbox, before the runtime starts.
 */
export interface WipSettings {
  workspace: string;
  /** The runtime's HOME (its data dir is `$XDG_DATA_HOME/opencode`, else `~/.local/share/opencode`). */
  home: string;
  xdgDataHome: string | undefined;
  maxBytes: number;
}

export interface Skipped {
  path: string;
  bytes: number;
  reason: string;
}

export interface Packed {
  frame: Buffer;
  /** Same key: nothing changed since the last checkpoint. */
  key: string;
  wipSha: string | null;
  skipped: Skipped[];
}

const IDENTITY = { GIT_AUTHOR_NAME: 'svc', GIT_AUTHOR_EMAIL: 'svc@localhost', GIT_COMMITTER_NAME: 'svc', GIT_COMMITTER_EMAIL: 'svc@localhost' };
const BUNDLE_REF = 'refs/svc/wip';
/** Files of the runtime's data dir that hold the conversation (SQLite's -shm is rebuilt from the WAL). */
const CONVERSATION_FILES = ['opencode.db', 'opencode.db-wal'];
const CONVERSATION_DIRS = ['storage'];

export const runtimeDataDir = (s: Pick<WipSettings, 'home' | 'xdgDataHome'>): string => path.join(s.xdgDataHome ?? path.join(s.home, '.local', 'share'), 'opencode');

const scratchDir = path.join(os.tmpdir(), `svc-wip-${process.pid}`);

/**
 * The runtime's version: from the npm package it was installed with (`opencode-ai`'s
 * package.json next to its binary: no process to start, so a loaded machine cannot time
 * it out), else `<runtime> --version`, else null.
 */
export async function runtimeVersion(command: string): Promise<string | null> {
  return (await packageVersion(command)) ?? (await versionFlag(command));
}

async function packageVersion(command: string): Promise<string | null> {
  if (!command.includes('/')) return null;
  let dir = await realpath(command).then(path.dirname, () => null);
  for (let i = 0; dir && i < 4; i++, dir = path.dirname(dir)) {
    const pkg = await readFile(path.join(dir, 'package.json'), 'utf8').then((t) => JSON.parse(t) as { name?: unknown; version?: unknown }, () => null);
    if (pkg && typeof pkg.name === 'string' && /opencode/.test(pkg.name) && typeof pkg.version === 'string') return pkg.version.slice(0, 200);
  }
  return null;
}

function versionFlag(command: string): Promise<string | null> {
  return new Promise((resolve) => {
    // A HOME of its own: whatever the runtime writes at start must not meet the restored conversation.
    const home = path.join(scratchDir, 'version-home');
    execFile(command, ['--version'], { timeout: 60_000, env: { PATH: process.env.PATH ?? '', HOME: home } }, (err, stdout) => {
      const v = String(stdout ?? '').trim().split('\n')[0]?.trim() ?? '';
      resolve(err || !v ? null : v.slice(0, 200));
    });
  });
}

async function listNul(args: string[], cwd: string, env?: Record<string, string>): Promise<string[]> {
  const r = await runGit(args, { cwd, ...(env ? { env } : {}) });
  if (r.code !== 0) throw new Error(`git ${args[0]} failed: ${r.stderr.trim()}`);
  return r.stdout.split('\0').filter(Boolean);
}

/** The workspace's changes as a commit on the local HEAD, within the cap. */
async function workspaceCommit(s: WipSettings): Promise<{ sha: string | null; head: string | null; tree: string | null; skipped: Skipped[] }> {
  const ws = s.workspace;
  const head = (await runGit(['rev-parse', '--verify', '--quiet', 'HEAD^{commit}'], { cwd: ws })).stdout.trim();
  if (!/^[0-9a-f]{40}/.test(head)) return { sha: null, head: null, tree: null, skipped: [] };
  await mkdir(scratchDir, { recursive: true });
  const index = path.join(scratchDir, `index-${randomUUID()}`);
  const env = { GIT_INDEX_FILE: index, GIT_LITERAL_PATHSPECS: '1' };
  try {
    await git(['read-tree', head], { cwd: ws, env });
    const changed = await listNul(['diff', '--name-only', '-z', '--no-renames', 'HEAD', '--'], ws, env);
    const untracked = await listNul(['ls-files', '-z', '--others', '--exclude-standard'], ws, env);
    const skipped: Skipped[] = [];
    const keep: string[] = [];
    let total = 0;
    for (const p of [...new Set([...changed, ...untracked])].sort()) {
      if (p.endsWith('/')) {
        skipped.push({ path: p, bytes: 0, reason: 'a nested repository' });
        continue;
      }
      const st = await lstat(path.join(ws, p)).catch(() => null);
      const bytes = st && !st.isDirectory() ? st.size : 0;
      if (total + bytes > s.maxBytes) {
        skipped.push({ path: p, bytes, reason: 'over SVC_SESSION_WIP_MAX_BYTES' });
        continue;
      }
      total += bytes;
      keep.push(p);
    }
    if (keep.length) {
      const list = path.join(scratchDir, `paths-${randomUUID()}`);
      await writeFile(list, keep.join('\0') + '\0');
      try {
        await git(['add', '-A', '--force', `--pathspec-from-file=${list}`, '--pathspec-file-nul'], { cwd: ws, env });
      } finally {
        await rm(list, { force: true });
      }
    }
    const tree = await git(['write-tree'], { cwd: ws, env });
    const sha = await git(['commit-tree', tree, '-p', head, '-m', 'svc: the saved workspace (pause and resume)'], { cwd: ws, env: { ...env, ...IDENTITY } });
    return { sha, head, tree, skipped };
  } finally {
    await rm(index, { force: true });
  }
}

/** A prerequisite-free bundle of `sha`, made in a scratch repository that borrows the workspace's objects. */
async function bundleOf(ws: string, sha: string): Promise<Buffer> {
  const repo = path.join(scratchDir, 'bundle.git');
  if (!existsSync(path.join(repo, 'HEAD'))) await git(['init', '--quiet', '--bare', repo]);
  const objects = (await git(['rev-parse', '--path-format=absolute', '--git-path', 'objects'], { cwd: ws })).trim();
  await writeFile(path.join(repo, 'objects', 'info', 'alternates'), objects + '\n');
  await git(['update-ref', BUNDLE_REF, sha], { cwd: repo });
  const file = path.join(scratchDir, `out-${randomUUID()}.bundle`);
  try {
    await git(['bundle', 'create', '--quiet', file, BUNDLE_REF], { cwd: repo });
    return await readFile(file);
  } finally {
    await rm(file, { force: true });
  }
}

async function walk(dir: string, rel: string, out: string[]): Promise<void> {
  for (const e of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
    const r = rel ? `${rel}/${e.name}` : e.name;
    if (e.isDirectory()) await walk(path.join(dir, e.name), r, out);
    else if (e.isFile()) out.push(r);
  }
}

/** The runtime's conversation files (never its auth files), as an archive; empty when there is none or it is over the cap. */
async function conversationArchive(s: WipSettings, skipped: Skipped[]): Promise<Buffer> {
  const root = runtimeDataDir(s);
  const rels: string[] = CONVERSATION_FILES.filter((f) => existsSync(path.join(root, f)));
  for (const d of CONVERSATION_DIRS) await walk(path.join(root, d), d, rels);
  const files: ArchivedFile[] = [];
  let total = 0;
  for (const rel of rels) {
    if (/(^|\/)(mcp-)?auth\.json$/.test(rel)) continue;
    const data = await readFile(path.join(root, rel)).catch(() => null);
    if (!data) continue;
    total += data.length;
    files.push({ path: rel, data: data.toString('base64') });
  }
  if (files.length === 0) return Buffer.alloc(0);
  const archive = Buffer.from(JSON.stringify(files));
  if (archive.length > s.maxBytes) {
    skipped.push({ path: '(the agent conversation)', bytes: total, reason: 'over SVC_SESSION_WIP_MAX_BYTES' });
    return Buffer.alloc(0);
  }
  return archive;
}

export async function packCheckpoint(s: WipSettings, version: string | null): Promise<Packed> {
  const c = await workspaceCommit(s);
  const bundle = c.sha ? await bundleOf(s.workspace, c.sha) : Buffer.alloc(0);
  const conversation = await conversationArchive(s, c.skipped);
  const key = createHash('sha256').update(`${c.head}\n${c.tree}\n${JSON.stringify(c.skipped)}\n`).update(conversation).digest('hex');
  const frame = encodeFrame({ wip_sha: c.sha, head_sha: c.head, skipped: c.skipped, runtime_version: version, workspace: s.workspace }, bundle, conversation);
  return { frame, key, wipSha: c.sha, skipped: c.skipped };
}

export interface Restored {
  workspace: 'restored' | 'none' | 'failed';
  conversation: string;
  message: string | null;
}

/** Applies a saved checkpoint to the fresh clone and the runtime's data dir. */
export async function restoreCheckpoint(s: WipSettings, frame: Buffer, log: Logger): Promise<Restored> {
  const { header, bundle, conversation } = decodeFrame(frame);
  const wip = typeof header.wip_sha === 'string' && /^[0-9a-f]{40}([0-9a-f]{24})?$/.test(header.wip_sha) ? header.wip_sha : null;
  let workspace: Restored['workspace'] = 'none';
  if (wip && bundle.length) {
    try {
      await restoreWorkspace(s.workspace, bundle, wip);
      workspace = 'restored';
    } catch (err) {
      workspace = 'failed';
      log.error({ err: (err as Error).message }, 'the saved workspace could not be restored');
    }
  }
  if (conversation.length) {
    await bridgeOldWorkspace(s.workspace, header.workspace, log);
    const root = runtimeDataDir(s);
    const files = JSON.parse(conversation.toString('utf8')) as ArchivedFile[];
    for (const f of files) {
      if (typeof f.path !== 'string' || f.path.startsWith('/') || f.path.split('/').some((x) => x === '' || x === '.' || x === '..')) continue;
      const dest = path.join(root, f.path);
      await mkdir(path.dirname(dest), { recursive: true });
      await writeFile(dest, Buffer.from(String(f.data), 'base64'), { mode: 0o600 });
    }
  }
  return { workspace, conversation: String(header.conversation ?? 'none'), message: typeof header.message === 'string' ? header.message : null };
}

/**
 * The runtime keeps each conversation's directory. Where the workspace path changes from
 * one sandbox to the next (the `process` provider: `<sandboxes>/<sandbox id>/workspace`;
 * isolated providers always use `/workspace`), the old path is made a link to the new
 * workspace, so the resumed conversation's tools run in the restored tree. Only a sibling
 * sandbox's workspace path that does not exist, never anywhere else.
 */
async function bridgeOldWorkspace(current: string, saved: unknown, log: Logger): Promise<void> {
  if (typeof saved !== 'string' || !path.isAbsolute(saved) || path.normalize(saved) !== saved || saved === current) return;
  const root = path.dirname(path.dirname(current));
  if (path.dirname(path.dirname(saved)) !== root || path.basename(saved) !== path.basename(current) || existsSync(saved)) return;
  try {
    await mkdir(path.dirname(saved), { recursive: true });
    await symlink(current, saved);
  } catch (err) {
    log.warn({ err: (err as Error).message }, 'the previous workspace path could not be linked; the conversation may not find its directory');
  }
}

async function restoreWorkspace(ws: string, bundle: Buffer, wip: string): Promise<void> {
  await mkdir(scratchDir, { recursive: true });
  const file = path.join(scratchDir, `in-${randomUUID()}.bundle`);
  await writeFile(file, bundle);
  try {
    // Writes the objects only: no ref of the workspace changes.
    await git(['bundle', 'unbundle', file], { cwd: ws });
  } finally {
    await rm(file, { force: true });
  }
  await git(['cat-file', '-e', `${wip}^{commit}`], { cwd: ws });
  const parent = await git(['rev-parse', `${wip}^1`], { cwd: ws });
  const head = await git(['rev-parse', 'HEAD'], { cwd: ws });
  const onTop = (await runGit(['merge-base', '--is-ancestor', head, parent], { cwd: ws })).code === 0;
  if (onTop) {
    // The saved local HEAD (with any commits not pushed yet), then the saved tree, unstaged.
    if (parent !== head) await git(['reset', '--quiet', '--hard', parent], { cwd: ws });
    await git(['read-tree', '-u', '--reset', wip], { cwd: ws });
  } else {
    // The branch moved on since the save: the saved changes, and the commits that were not
    // pushed, are applied on top of it, uncommitted (the agent sees them as changes).
    const base = (await runGit(['merge-base', head, wip], { cwd: ws })).stdout.trim();
    await git(['cherry-pick', '--no-commit', base ? `${base}..${wip}` : wip], { cwd: ws, env: IDENTITY });
  }
  await git(['reset', '--quiet'], { cwd: ws });
}

/** `PUT …/wip` through the gateway; the server's answer. */
export async function sendCheckpoint(url: string, token: string, frame: Buffer): Promise<unknown> {
  const res = await fetch(url, { method: 'PUT', headers: { authorization: `Bearer ${token}`, 'content-type': FRAME_CONTENT_TYPE }, body: frame, signal: AbortSignal.timeout(300_000) });
  const text = await res.text();
  if (!res.ok) throw new Error(`the server answered ${res.status}: ${text.slice(0, 300)}`);
  return JSON.parse(text) as unknown;
}

/** `GET …/wip?runtime_version=`: the saved frame, or null when nothing is saved. */
export async function fetchCheckpoint(url: string, token: string, version: string | null, timeoutMs = 300_000): Promise<Buffer | null> {
  const u = new URL(url);
  if (version) u.searchParams.set('runtime_version', version);
  const res = await fetch(u, { headers: { authorization: `Bearer ${token}` }, signal: AbortSignal.timeout(timeoutMs) });
  if (res.status === 404) {
    await res.arrayBuffer().catch(() => undefined);
    return null;
  }
  if (!res.ok) throw new Error(`the server answered ${res.status}`);
  return Buffer.from(await res.arrayBuffer());
}
