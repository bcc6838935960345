/**
 * Commands carry everything `decide` needs, so it stays pure: the clock (`now`), the
 * actor and new ids arrive here, as do facts read from git by the caller (branch tips,
 * the merge result).
 */
export interface CommandMeta {
  actor: string;
  now: Date;
}

export interface OpenChangeRequest {
  type: 'OpenChangeRequest';
  data: {
    cr_id: string;
    account_id: string;
    project_id: string;
    number: number;
    title: string;
    description: string;
    base_ref: string;
    head_ref: string;
    head_commit_sha: string | null;
    base_commit_sha: string | null;
    origin_session_id: string | null;
    metadata: Record<string, unknown>;
  };
  meta: CommandMeta;
}

export interface RefreshChangeRequest {
  type: 'RefreshChangeRequest';
  data: { head_commit_sha: string | null; base_commit_sha: string | null };
  meta: CommandMeta;
}

export interface EditChangeRequest {
  type: 'EditChangeRequest';
  data: { title?: string; description?: string };
  meta: CommandMeta;
}

export interface MergeChangeRequest {
  type: 'MergeChangeRequest';
  data: {
    strategy: 'fast-forward' | 'merge-commit' | 'up-to-date';
    base_commit_sha: string;
    head_commit_sha: string;
    merge_commit_sha: string;
  };
  meta: CommandMeta;
}

export interface CloseChangeRequest {
  type: 'CloseChangeRequest';
  meta: CommandMeta;
}

export interface ReopenChangeRequest {
  type: 'ReopenChangeRequest';
  meta: CommandMeta;
}

export type ChangeRequestCommand =
  | OpenChangeRequest
  | RefreshChangeRequest
  | EditChangeRequest
  | MergeChangeRequest
  | CloseChangeRequest
  | ReopenChangeRequest;
