/** `svc channels`: the API calls and the JSON they exchange. */
import type { ApiClient } from '../../api-client.js';

export type { Channel } from '../../../contracts/channels.js';
import type { Channel } from '../../../contracts/channels.js';

const base = (project: string) => `/projects/${encodeURIComponent(project)}/channels`;

export const channelsApi = (api: ApiClient) => ({
  list: async (project: string) => (await api.request<{ channels: Channel[] }>('GET', base(project))).channels,
  add: async (project: string, kind: string, webhookUrl: string) =>
    (await api.request<{ channel: Channel }>('POST', base(project), { kind, webhook_url: webhookUrl })).channel,
  remove: (project: string, id: string) => api.request<void>('DELETE', `${base(project)}/${encodeURIComponent(id)}`),
});
