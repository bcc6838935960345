/**
 * The sessions API (contracts.md "Sessions"), over the CLI's ApiClient. Shared by
 * `svc sessions` and the dashboard's session pages.
 */
import type { ApiClient } from './api-client.js';

export type { Session } from '../contracts/sessions.js';
import type { CreateSessionInput, Session } from '../contracts/sessions.js';

export type NewSessionInput = CreateSessionInput;

const enc = encodeURIComponent;
const base = (project: string) => `/projects/${enc(project)}/sessions`;
const one = (project: string, id: string) => `${base(project)}/${enc(id)}`;

export const sessionsApi = (api: ApiClient) => ({
  list: async (project: string, status?: string) =>
    (await api.request<{ sessions: Session[] }>('GET', base(project) + (status ? `?status=${enc(status)}` : ''))).sessions,
  get: async (project: string, id: string) => (await api.request<{ session: Session }>('GET', one(project, id))).session,
  create: async (project: string, input: NewSessionInput) => (await api.request<{ session: Session }>('POST', base(project), input)).session,
  stop: async (project: string, id: string) => (await api.request<{ session: Session } | undefined>('POST', `${one(project, id)}/stop`, {}))?.session,
  refresh: async (project: string, id: string) => (await api.request<{ session: Session } | undefined>('POST', `${one(project, id)}/refresh`, {}))?.session,
  /** `fresh`: the spec's plain restart, without what the stop saved (pause and resume). */
  restart: async (project: string, id: string, fresh = false) => (await api.request<{ session: Session } | undefined>('POST', `${one(project, id)}/restart`, fresh ? { fresh: true } : {}))?.session,
  remove: (project: string, id: string) => api.request<void>('DELETE', one(project, id)),
  /** `agentSession`: the runtime's conversation to continue (default: a new one). */
  prompt: (project: string, id: string, text: string, agentSession?: string) =>
    api.request<{ session_id: string; created: boolean }>('POST', `${one(project, id)}/prompt`, { text, ...(agentSession ? { session_id: agentSession } : {}) }),
  abort: (project: string, id: string) => api.request<unknown>('POST', `${one(project, id)}/abort`, {}),
  /** `.../agent/<path>`: the agent runtime behind the server's proxy. */
  agentPath: (project: string, id: string, path: string) => `${api.apiBase}${one(project, id)}/agent/${path.replace(/^\/+/, '')}`,
  /** The preview's own origin (`p<port>-<id>.<preview domain>`), as the server names it. */
  previewUrl: async (project: string, id: string, port: number) =>
    (await api.request<{ url: string }>('GET', `${one(project, id)}/preview-url?port=${port}`)).url,
});
