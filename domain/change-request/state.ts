/** A change request as the spec's `change_requests` row describes it. */
export type CrStatus = 'open' | 'merged' | 'closed';

export interface ChangeRequest {
  cr_id: string;
  account_id: string;
  project_id: string;
  number: number;
  title: string;
  description: string;
  base_ref: string;
  head_ref: string;
  status: CrStatus;
  head_commit_sha: string | null;
  base_commit_sha: string | null;
  origin_session_id: string | null;
  created_by: string;
  merged_at: string | null;
  merged_by: string | null;
  merge_commit_sha: string | null;
  closed_at: string | null;
  closed_by: string | null;
  metadata: Record<string, unknown>;
  created_at: string;
  updated_at: string;
  /**
   * The open CR it was stacked on (its base is that CR's head), recorded at open or when
   * a person retargets it; not one of the spec's fields, so never in the CR's own JSON
   * (the stack has its own route).
   */
  parent_cr_id: string | null;
}

/** Before the Opened event the stream has no state. */
export type CrState = ChangeRequest | null;
