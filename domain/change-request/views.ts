/**
 * What the API reports about a CR's branches: the spec's merge preview and diff result.
 * Computed by the git engines (infra/git), read by the CLI and the dashboard.
 */

export type FileStatus = 'added' | 'modified' | 'deleted';

export interface DiffFile {
  path: string;
  status: FileStatus;
  additions: number;
  deletions: number;
  binary: boolean;
}

/** Three-dot diff base...head: changes on head since the merge base. */
export interface DiffResult {
  base_sha: string;
  head_sha: string;
  merge_base: string | null;
  files: DiffFile[];
  additions: number;
  deletions: number;
  patch: string;
}

/** Field names are the spec's merge-preview table, exactly. */
export interface MergePreview {
  base_sha: string;
  head_sha: string;
  merge_base: string | null;
  is_up_to_date: boolean;
  can_merge: boolean;
  can_fast_forward: boolean;
  conflicts: string[];
}
