/** A project as stored: the row services pass around (credentials still sealed). */
export interface ProjectRecord {
  project_id: string;
  account_id: string;
  name: string;
  slug: string;
  repo_url: string | null;
  repo_credentials_enc: string | null;
  default_branch: string;
  created_at: Date;
  /** A bare repository this service hosts, served at repo_url over smart HTTP. */
  repo_managed?: boolean;
}
