import { z } from 'zod';

/**
 * The slice of opencode's server API the daemon drives itself (everything else reaches
 * the runtime through the proxy untouched):
 *   POST /session                      {title?}            -> Session {id, ...}
 *   POST /session/:id/prompt_async     {parts, agent?, model?} -> 204, runs in background
 *   POST /session/:id/abort                                 -> true
 * and for the warm-up (runtime-warmup.ts):
 *   GET /config/providers, POST /session/:id/message (waits for the turn),
 *   DELETE /session/:id, POST /instance/dispose
 */
export class RuntimeError extends Error {
  constructor(
    readonly status: number | undefined,
    message: string,
  ) {
    super(message);
    this.name = 'RuntimeError';
  }
}

const sessionSchema = z.object({ id: z.string().min(1) }).loose();

export interface PromptOptions {
  agent?: string | undefined;
  /** `provider/model`, as in SVC_AGENT_MODEL. */
  model?: string | undefined;
}

export class RuntimeClient {
  constructor(
    private readonly port: number,
    private readonly timeoutMs = 15_000,
  ) {}

  private async call(method: string, path: string, body: unknown, timeoutMs = this.timeoutMs): Promise<unknown> {
    let res: Response;
    try {
      res = await fetch(`http://127.0.0.1:${this.port}${path}`, {
        method,
        headers: { 'content-type': 'application/json', accept: 'application/json' },
        body: body === undefined ? null : JSON.stringify(body),
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (err) {
      throw new RuntimeError(undefined, `agent runtime did not answer ${method} ${path}: ${(err as Error).message}`);
    }
    const text = await res.text().catch(() => '');
    if (!res.ok) throw new RuntimeError(res.status, `agent runtime answered ${res.status} to ${method} ${path}`);
    if (text === '') return undefined;
    try {
      return JSON.parse(text) as unknown;
    } catch {
      return text;
    }
  }

  async createSession(title?: string): Promise<string> {
    const parsed = sessionSchema.safeParse(await this.call('POST', '/session', title ? { title } : {}));
    if (!parsed.success) throw new RuntimeError(undefined, 'agent runtime returned a session without an id');
    return parsed.data.id;
  }

  private static body(text: string, opts: PromptOptions): Record<string, unknown> {
    const body: Record<string, unknown> = { parts: [{ type: 'text', text }] };
    if (opts.agent) body.agent = opts.agent;
    const slash = opts.model?.indexOf('/') ?? -1;
    if (opts.model && slash > 0) body.model = { providerID: opts.model.slice(0, slash), modelID: opts.model.slice(slash + 1) };
    return body;
  }

  /** A turn, answered when it ended (the runtime's own failures are in its answer, not an error). */
  async prompt(sessionId: string, text: string, opts: PromptOptions, timeoutMs: number): Promise<void> {
    await this.call('POST', `/session/${encodeURIComponent(sessionId)}/message`, RuntimeClient.body(text, opts), timeoutMs);
  }

  async deleteSession(sessionId: string): Promise<void> {
    await this.call('DELETE', `/session/${encodeURIComponent(sessionId)}`, undefined);
  }

  /** Loads the workspace's instance (config, providers) if it was not loaded yet. */
  async providers(timeoutMs: number): Promise<void> {
    await this.call('GET', '/config/providers', undefined, timeoutMs);
  }

  /** Drops the loaded instance: the next request loads config and providers afresh. */
  async disposeInstance(): Promise<void> {
    await this.call('POST', '/instance/dispose', undefined);
  }

  async promptAsync(sessionId: string, text: string, opts: PromptOptions = {}): Promise<void> {
    await this.call('POST', `/session/${encodeURIComponent(sessionId)}/prompt_async`, RuntimeClient.body(text, opts));
  }

  async abort(sessionId: string, timeoutMs: number): Promise<void> {
    await this.call('POST', `/session/${encodeURIComponent(sessionId)}/abort`, undefined, timeoutMs);
  }
}
