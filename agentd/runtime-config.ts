/**
 * The runtime's provider for the server's model gateway, handed to opencode as
 * OPENCODE_CONFIG_CONTENT (never a file in the workspace, where the agent could commit
 * it): provider `svc` (`@ai-sdk/openai-compatible`, bundled with opencode, so nothing is
 * downloaded at boot) at the daemon's model relay (model-relay.ts) with the relay's own
 * key, declaring the models of SVC_LLM_MODELS; the relay adds the session's key
 * (SVC_LLM_API_KEY) on its way to SVC_LLM_BASE_URL. And the session's model
 * (SVC_AGENT_MODEL) as the default, for the runtime's own calls (titles) and turns
 * started through its API.
 */
export const GATEWAY_PROVIDER = 'svc';

export interface GatewaySettings {
  /** The relay's URL (or, without a relay, the gateway's). */
  baseUrl: string | undefined;
  /** The relay's own key. */
  apiKey: string | undefined;
  models: string[];
  agentModel: string | undefined;
}

export function runtimeConfigContent(g: GatewaySettings): string | undefined {
  const config: Record<string, unknown> = {};
  if (g.baseUrl && g.apiKey) {
    const models = new Set(g.models);
    if (g.agentModel?.startsWith(`${GATEWAY_PROVIDER}/`)) models.add(g.agentModel.slice(GATEWAY_PROVIDER.length + 1));
    config.provider = {
      [GATEWAY_PROVIDER]: {
        npm: '@ai-sdk/openai-compatible',
        name: 'svc model gateway',
        options: { baseURL: g.baseUrl, apiKey: g.apiKey },
        models: Object.fromEntries([...models].map((m) => [m, { name: m, tool_call: true }])),
      },
    };
  }
  if (g.agentModel) {
    config.model = g.agentModel;
    if (g.agentModel.startsWith(`${GATEWAY_PROVIDER}/`)) config.small_model = g.agentModel;
  }
  return Object.keys(config).length ? JSON.stringify(config) : undefined;
}
