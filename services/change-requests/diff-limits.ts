import type { DiffFile, DiffResult } from '../../infra/git/port.js';

/**
 * Diff limits in GitHub's shape: every changed file is listed with its stats, but a
 * file's patch is left out (`patch_truncated: true`) when it is over the per-file limits
 * or would take the response over the total ones; past `maxFiles` the list itself stops
 * (`files_truncated`). The response is bounded whatever the change: at most the total
 * limits of patch text plus the file list.
 */
export interface DiffLimits {
  maxFileBytes: number;
  maxFileLines: number;
  maxTotalBytes: number;
  maxTotalLines: number;
  maxFiles: number;
}

export const DEFAULT_DIFF_LIMITS: DiffLimits = {
  maxFileBytes: 500_000,
  maxFileLines: 20_000,
  maxTotalBytes: 5_000_000,
  maxTotalLines: 100_000,
  maxFiles: 3000,
};

export type LimitedDiffFile = DiffFile & { patch_truncated: boolean };

export interface LimitedDiff extends Omit<DiffResult, 'files'> {
  files: LimitedDiffFile[];
  /** Some patch text (or some files) were left out. */
  truncated: boolean;
  /** More files changed than are listed. */
  files_truncated: boolean;
  total_files: number;
  limits: { max_file_bytes: number; max_file_lines: number; max_total_bytes: number; max_total_lines: number; max_files: number };
}

/** Splits a unified patch into per-file sections (each starts at `diff --git `). */
function sections(patch: string): string[] {
  const out: string[] = [];
  let start = patch.startsWith('diff --git ') ? 0 : patch.indexOf('\ndiff --git ');
  if (start < 0) return out;
  if (start > 0) start += 1;
  for (;;) {
    const next = patch.indexOf('\ndiff --git ', start);
    if (next < 0) {
      out.push(patch.slice(start));
      return out;
    }
    out.push(patch.slice(start, next + 1));
    start = next + 1;
  }
}

/** C-style unquoting of a path git quoted in a header (`"a/caf\\303\\251"`). */
function unquote(q: string): string {
  const bytes: number[] = [];
  for (let i = 1; i < q.length - 1; i++) {
    const ch = q[i]!;
    if (ch !== '\\') {
      bytes.push(...Buffer.from(ch, 'utf8'));
      continue;
    }
    const n = q[++i]!;
    if (/[0-7]/.test(n)) {
      bytes.push(parseInt(q.slice(i, i + 3), 8));
      i += 2;
    } else bytes.push(({ n: 10, t: 9, r: 13, a: 7, b: 8, f: 12, v: 11 } as Record<string, number>)[n] ?? n.charCodeAt(0));
  }
  return Buffer.from(bytes).toString('utf8');
}

/** The path of a `diff --git a/X b/X` section (no renames: both sides are the same path). */
export function sectionPath(section: string): string | null {
  const nl = section.indexOf('\n');
  const header = (nl < 0 ? section : section.slice(0, nl)).slice('diff --git '.length);
  if (header.startsWith('"')) {
    const m = /^("(?:[^"\\]|\\.)*") /.exec(header);
    return m ? unquote(m[1]!).replace(/^a\//, '') : null;
  }
  const len = (header.length - 3) / 2 - 1;
  if (!Number.isInteger(len) || len < 0) return null;
  const a = header.slice(2, 2 + len);
  return header === `a/${a} b/${a}` ? a : null;
}

const countLines = (s: string) => {
  let n = 0;
  for (let i = s.indexOf('\n'); i >= 0; i = s.indexOf('\n', i + 1)) n++;
  return n;
};

/**
 * `patchComplete` false: the engine stopped reading the patch at its byte cap, so the
 * last section read is partial and later files have none.
 */
export function limitDiff(diff: DiffResult & { patch_complete?: boolean }, limits: DiffLimits = DEFAULT_DIFF_LIMITS): LimitedDiff {
  const { patch_complete: complete = true, ...rest } = diff;
  const secs = sections(diff.patch);
  if (!complete && secs.length > 0) secs.pop(); // partial
  // Sections are matched to files by their header's path; a file without a section of
  // its own (left out by the engine's read cap) is truncated.
  const byPath = new Map<string, string>();
  for (const sec of secs) {
    const p = sectionPath(sec);
    if (p !== null) byPath.set(p, sec);
  }
  const listed = diff.files.slice(0, limits.maxFiles);
  let bytes = 0;
  let lines = 0;
  const kept: string[] = [];
  const files: LimitedDiffFile[] = listed.map((f) => {
    const sec = byPath.get(f.path);
    if (sec === undefined) return { ...f, patch_truncated: true };
    const b = Buffer.byteLength(sec, 'utf8');
    const l = countLines(sec);
    const fits = b <= limits.maxFileBytes && l <= limits.maxFileLines && bytes + b <= limits.maxTotalBytes && lines + l <= limits.maxTotalLines;
    if (!fits) return { ...f, patch_truncated: true };
    bytes += b;
    lines += l;
    kept.push(sec);
    return { ...f, patch_truncated: false };
  });
  const filesTruncated = diff.files.length > listed.length;
  return {
    ...rest,
    files,
    patch: kept.join(''),
    truncated: filesTruncated || files.some((f) => f.patch_truncated),
    files_truncated: filesTruncated,
    total_files: diff.files.length,
    limits: {
      max_file_bytes: limits.maxFileBytes,
      max_file_lines: limits.maxFileLines,
      max_total_bytes: limits.maxTotalBytes,
      max_total_lines: limits.maxTotalLines,
      max_files: limits.maxFiles,
    },
  };
}
