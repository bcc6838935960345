import { DomainError, validationError } from '../../domain/errors.js';
import type { ProjectRecord } from '../../domain/project.js';
import type { Session } from '../../domain/session/index.js';
import type { Config } from '../../infra/config.js';
import type { SessionDeps } from './deps.js';
import { manifestInForce } from './sandbox-settings.js';

/**
 * Which model a session's agent uses (docs/models.md): the session's own (`--model`, a
 * trigger's `model`) > the manifest in force's `[agent] model` > SVC_LLM_MODEL. A name the
 * gateway offers goes through the server's `/v1/llm` (the runtime's provider `svc`); any
 * other `provider/model` is a provider of the runtime itself, whose key the project keeps
 * as a secret.
 */
export const GATEWAY_PROVIDER = 'svc';

export interface ModelChoice {
  /** The name as chosen; null: nothing names a model. */
  model: string | null;
  via: 'gateway' | 'provider' | null;
  source: 'session' | 'manifest' | 'server' | null;
  /** What the runtime is told (SVC_AGENT_MODEL): `svc/<name>` or `provider/model`. */
  runtimeModel: string | null;
}

/** The models sessions may use through the gateway: SVC_LLM_MODELS, plus SVC_LLM_MODEL. */
export function gatewayModels(config: Pick<Config, 'SVC_LLM_MODELS' | 'SVC_LLM_MODEL'>): string[] {
  const list = config.SVC_LLM_MODELS.split(',').map((m) => m.trim()).filter(Boolean);
  if (config.SVC_LLM_MODEL && !list.includes(config.SVC_LLM_MODEL)) list.unshift(config.SVC_LLM_MODEL);
  return list;
}

export const gatewayConfigured = (config: Pick<Config, 'SVC_LLM_UPSTREAM_URL'>): boolean => !!config.SVC_LLM_UPSTREAM_URL;

/** Pure: the choice among the three sources. */
export function chooseModel(config: Config, sessionModel: string | null, manifestModel: string | undefined): ModelChoice {
  const [model, source] = sessionModel ? [sessionModel, 'session' as const] : manifestModel ? [manifestModel, 'manifest' as const] : config.SVC_LLM_MODEL ? [config.SVC_LLM_MODEL, 'server' as const] : [null, null];
  if (!model) return { model: null, via: null, source: null, runtimeModel: null };
  const offered = gatewayModels(config);
  const explicitGateway = model.startsWith(`${GATEWAY_PROVIDER}/`) && offered.includes(model.slice(GATEWAY_PROVIDER.length + 1));
  if (offered.includes(model) || explicitGateway || !model.includes('/')) {
    const name = explicitGateway ? model.slice(GATEWAY_PROVIDER.length + 1) : model;
    return { model: name, via: 'gateway', source, runtimeModel: `${GATEWAY_PROVIDER}/${name}` };
  }
  return { model, via: 'provider', source, runtimeModel: model };
}

export async function modelChoiceOf(deps: Pick<SessionDeps, 'db' | 'repos' | 'config'>, session: Pick<Session, 'model'>, project: ProjectRecord): Promise<ModelChoice> {
  const manifest = await manifestInForce(deps, project, false).catch(() => null);
  return chooseModel(deps.config, session.model, manifest?.agent?.model);
}

/** The secret names a runtime provider reads its key from (the first is the one documented). */
export function providerKeyNames(provider: string): string[] {
  const known: Record<string, string[]> = {
    anthropic: ['ANTHROPIC_API_KEY'],
    openai: ['OPENAI_API_KEY'],
    google: ['GOOGLE_GENERATIVE_AI_API_KEY', 'GEMINI_API_KEY'],
    openrouter: ['OPENROUTER_API_KEY'],
    mistral: ['MISTRAL_API_KEY'],
    groq: ['GROQ_API_KEY'],
    xai: ['XAI_API_KEY'],
    deepseek: ['DEEPSEEK_API_KEY'],
  };
  return known[provider] ?? [`${provider.toUpperCase().replace(/[^A-Z0-9]+/g, '_')}_API_KEY`];
}

/**
 * Why a prompt cannot reach a model, or null when it can: said at once (409), naming what
 * to configure and where, instead of the runtime failing a minute later.
 */
export function modelProblem(config: Config, choice: ModelChoice, secretNames: string[]): string | null {
  const server = 'set SVC_LLM_UPSTREAM_URL, SVC_LLM_UPSTREAM_KEY and SVC_LLM_MODEL in the server\'s environment';
  if (choice.via === null) {
    return `No model is configured for this session: ${server}, or give the session a model (--model provider/model, or [agent] model in svc.toml) whose key the project keeps as a secret. See docs/models.md.`;
  }
  if (choice.via === 'gateway' && !gatewayConfigured(config)) {
    return `The model '${choice.model}' goes through the server's model gateway, which has no upstream: ${server}, or use a provider/model whose key the project keeps as a secret. See docs/models.md.`;
  }
  if (choice.via === 'provider') {
    const provider = choice.model!.slice(0, choice.model!.indexOf('/'));
    const names = providerKeyNames(provider);
    if (!names.some((n) => secretNames.includes(n))) {
      return `The model '${choice.model}' needs the project secret ${names[0]} (svc secrets set ${names[0]}), or use a model of the server's gateway. See docs/models.md.`;
    }
  }
  return null;
}

/** A bare model the gateway does not offer is refused when the session is created. */
export function assertModelOffered(config: Config, model: string | undefined): void {
  if (model === undefined || !gatewayConfigured(config)) return;
  const choice = chooseModel(config, model, undefined);
  const offered = gatewayModels(config);
  if (choice.via === 'gateway' && offered.length > 0 && !offered.includes(choice.model!)) {
    throw validationError(`The model '${model}' is not one the server's gateway offers (${offered.join(', ')}).`, [{ path: 'model', message: 'not offered by the gateway' }]);
  }
}

export const noModel = (message: string) => new DomainError('conflict', 'No model', message, { code: 'no_model' });
