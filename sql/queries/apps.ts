import type { Query } from '../query.js';
import type { SandboxHandle } from '../../domain/sandbox.js';

export interface AppRow {
  project_id: string;
  name: string;
  spec: { name: string; command: string; port: number; env?: Record<string, string>; health_path?: string; public?: boolean };
  manifest_hash: string;
  status: string;
  commit_sha: string | null;
  url: string | null;
  pid: number | null;
  /** The provider's handle of the sandbox serving `url`. */
  sandbox: SandboxHandle | null;
  /** Where the server reaches the app (`unix:<socket>`, or `http://127.0.0.1:<port>` on the host's network). */
  target: string | null;
  deployed_at: Date | null;
  last_error: string | null;
  removed: boolean;
}

const cols = 'project_id, name, spec, manifest_hash, status, commit_sha, url, pid, sandbox, target, deployed_at, last_error, removed';

export const appQueries = {
  /** Apps that should run and ran before (worker start: redeploy those whose process is gone). */
  resumable: (): Query => ({ text: `SELECT ${cols} FROM apps WHERE NOT removed AND commit_sha IS NOT NULL`, values: [] }),
  list: (projectId: string): Query => ({ text: `SELECT ${cols} FROM apps WHERE project_id = $1 AND NOT removed ORDER BY name`, values: [projectId] }),
  all: (projectId: string): Query => ({ text: `SELECT ${cols} FROM apps WHERE project_id = $1 ORDER BY name`, values: [projectId] }),
  get: (projectId: string, name: string): Query => ({ text: `SELECT ${cols} FROM apps WHERE project_id = $1 AND name = $2`, values: [projectId, name] }),
  /** Returns the row only when the entry is new or its hash changed (or it comes back after removal). */
  upsertChanged: (projectId: string, name: string, spec: unknown, hash: string): Query => ({
    text: `INSERT INTO apps (project_id, name, spec, manifest_hash, status) VALUES ($1, $2, $3::jsonb, $4, 'pending')
      ON CONFLICT (project_id, name) DO UPDATE SET spec = EXCLUDED.spec, manifest_hash = EXCLUDED.manifest_hash,
        status = 'pending', removed = false
      WHERE apps.manifest_hash <> EXCLUDED.manifest_hash OR apps.removed
      RETURNING name`,
    values: [projectId, name, JSON.stringify(spec), hash],
  }),
  markRemoved: (projectId: string, keep: string[]): Query => ({
    text: `UPDATE apps SET removed = true WHERE project_id = $1 AND NOT removed AND NOT (name = ANY($2::text[])) RETURNING name`,
    values: [projectId, keep],
  }),
  setLive: (p: { projectId: string; name: string; hash: string; commit: string; url: string; sandbox: SandboxHandle; target: string }): Query => ({
    text: `UPDATE apps SET status = 'live', commit_sha = $4, url = $5, pid = NULL, sandbox = $6::jsonb, target = $7, deployed_at = now(), last_error = NULL
      WHERE project_id = $1 AND name = $2 AND manifest_hash = $3 AND NOT removed`,
    values: [p.projectId, p.name, p.hash, p.commit, p.url, JSON.stringify(p.sandbox), p.target],
  }),
  /** The live apps of the projects whose id lies in [lo, hi] (an app host names 12 hex of it). */
  servedInRange: (lo: string, hi: string): Query => ({
    text: `SELECT ${cols} FROM apps WHERE project_id BETWEEN $1::uuid AND $2::uuid AND NOT removed AND target IS NOT NULL ORDER BY project_id, name`,
    values: [lo, hi],
  }),
  setStatus: (projectId: string, name: string, status: string, error: string | null): Query => ({
    text: 'UPDATE apps SET status = $3, last_error = COALESCE($4, last_error) WHERE project_id = $1 AND name = $2',
    values: [projectId, name, status, error],
  }),
  setStopped: (projectId: string, name: string): Query => ({
    text: `UPDATE apps SET status = 'stopped', pid = NULL, sandbox = NULL, target = NULL, url = NULL WHERE project_id = $1 AND name = $2`,
    values: [projectId, name],
  }),
  deployStarted: (p: { deployId: string; projectId: string; name: string; commit: string; hash: string }): Query => ({
    text: `INSERT INTO app_deploys (deploy_id, project_id, name, commit_sha, manifest_hash, status) VALUES ($1, $2, $3, $4, $5, 'started')`,
    values: [p.deployId, p.projectId, p.name, p.commit, p.hash],
  }),
  deployFinished: (deployId: string, status: 'live' | 'failed' | 'superseded', url: string | null, error: string | null): Query => ({
    text: 'UPDATE app_deploys SET status = $2, url = $3, error = $4, finished_at = now() WHERE deploy_id = $1',
    values: [deployId, status, url, error],
  }),
  deploys: (projectId: string, name: string, limit: number): Query => ({
    text: `SELECT deploy_id, commit_sha, manifest_hash, status, url, error, started_at, finished_at FROM app_deploys
      WHERE project_id = $1 AND name = $2 ORDER BY started_at DESC LIMIT $3`,
    values: [projectId, name, limit],
  }),
};
