/**
 * The sessions API (contracts.md "Sessions"), over the CLI's ApiClient. Shared by
 * `svc sessions` and the dashboard's session pages.
 */
import type { ApiClient } from './api-client.js';

export type SessionStatus = 'queued' | 'branching' | 'provisioning' | 'running' | 'stopped' | 'failed' | 'completed';

export interface Session {
  session_id: string;
  project_id: string;
  account_id: string;
  status: SessionStatus;
  base_ref: string;
  branch: string;
  agent: string;
  model: string | null;
  sandbox: { sandbox_id: string; state: string; provider: string; url: string | null } | null;
  error: { code: string; message: string; at: string } | null;
  created_by: string;
  created_at: string;
  updated_at: string;
  last_activity_at: string | null;
}

export interface NewSessionInput {
  agent?: string;
  model?: string;
  base_ref?: string;
  prompt?: string;
}

const enc = encodeURIComponent;
const base = (project: string) => `/projects/${enc(project)}/sessions`;
const one = (project: string, id: string) => `${base(project)}/${enc(id)}`;

export const sessionsApi = (api: ApiClient) => ({
  list: async (project: string, status?: string) =>
    (await api.request<{ sessions: Session[] }>('GET', base(project) + (status ? `?status=${enc(status)}` : ''))).sessions,
  get: async (project: string, id: string) => (await api.request<{ session: Session }>('GET', one(project, id))).session,
  create: async (project: string, input: NewSessionInput) => (await api.request<{ session: Session }>('POST', base(project), input)).session,
  stop: async (project: string, id: string) => (await api.request<{ session: Session } | undefined>('POST', `${one(project, id)}/stop`, {}))?.session,
  restart: async (project: string, id: string) => (await api.request<{ session: Session } | undefined>('POST', `${one(project, id)}/restart`, {}))?.session,
  remove: (project: string, id: string) => api.request<void>('DELETE', one(project, id)),
  prompt: (project: string, id: string, text: string) => api.request<unknown>('POST', `${one(project, id)}/prompt`, { text }),
  abort: (project: string, id: string) => api.request<unknown>('POST', `${one(project, id)}/abort`, {}),
  /** `.../agent/<path>`: the agent runtime behind the server's proxy. */
  agentPath: (project: string, id: string, path: string) => `${api.apiBase}${one(project, id)}/agent/${path.replace(/^\/+/, '')}`,
  /** The preview's own origin (`p<port>-<id>.<preview domain>`), as the server names it. */
  previewUrl: async (project: string, id: string, port: number) =>
    (await api.request<{ url: string }>('GET', `${one(project, id)}/preview-url?port=${port}`)).url,
});
