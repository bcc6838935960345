import type { DiffFile, DiffResult } from './port.js';

/** The three-dot diff result both engines return: their files, totalled. */
export function diffResult(base_sha: string, head_sha: string, merge_base: string | null, files: DiffFile[], patch: string): DiffResult {
  return {
    base_sha,
    head_sha,
    merge_base,
    files,
    additions: files.reduce((n, f) => n + f.additions, 0),
    deletions: files.reduce((n, f) => n + f.deletions, 0),
    patch,
  };
}
