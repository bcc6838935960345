/** `svc channels`: the API calls and the JSON they exchange. */
import type { ApiClient } from '../../api-client.js';

export interface Channel {
  channel_id: string;
  project_id: string;
  kind: string;
  webhook: string;
  created_by: string;
  created_at: string;
  delivered_count: number;
  last_delivered_at: string | null;
  last_error: string | null;
  last_error_at: string | null;
}

const base = (project: string) => `/projects/${encodeURIComponent(project)}/channels`;

export const channelsApi = (api: ApiClient) => ({
  list: async (project: string) => (await api.request<{ channels: Channel[] }>('GET', base(project))).channels,
  add: async (project: string, kind: string, webhookUrl: string) =>
    (await api.request<{ channel: Channel }>('POST', base(project), { kind, webhook_url: webhookUrl })).channel,
  remove: (project: string, id: string) => api.request<void>('DELETE', `${base(project)}/${encodeURIComponent(id)}`),
});
