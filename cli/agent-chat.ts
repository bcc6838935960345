/**
 * Talking to a session's agent runtime (opencode's HTTP API) through the server's proxy
 * (`.../sessions/:id/agent/*`): the reply streams from the runtime's `/event` SSE feed as
 * text-part updates; a turn ends when the runtime reports the session idle.
 */
import type { ApiClient } from './api-client.js';
import { ApiError } from './errors.js';
import { openSse, type SseStream } from './sse.js';

export interface AgentEvent {
  type: string;
  properties?: Record<string, unknown>;
}

export type TurnEnd = 'idle' | 'error' | 'closed';

/** What the agent is doing, for the progress line: `starting` (its runtime boots), `thinking`, `tool` (running one), `retry`. */
export type AgentActivity = { kind: 'starting' } | { kind: 'thinking' } | { kind: 'tool'; name: string } | { kind: 'retry'; attempt: number; message: string };

export class AgentChat {
  private agentSession?: string;
  private events?: SseStream;
  private readonly userMessages = new Set<string>();
  private readonly printed = new Map<string, number>();

  constructor(
    private readonly api: ApiClient,
    private readonly base: string,
    private readonly token: string,
    /**
     * Sends a prompt through the server (`POST …/prompt`), which refuses at once what no
     * model can answer (409 no_model) and passes the session's agent and model; absent:
     * straight to the runtime through the proxy.
     */
    private readonly prompt?: (text: string, agentSession: string) => Promise<unknown>,
    /** Told once when the runtime is still booting (503) and the chat waits for it. */
    private readonly onBooting?: () => void,
  ) {}

  private headers(): Record<string, string> {
    return { authorization: `Bearer ${this.token}`, 'user-agent': 'svc-cli' };
  }

  /**
   * A session is `running` once its daemon is up; the runtime behind it may still be
   * booting (503). Waits for it, a minute at most.
   */
  private async booted<T>(fn: () => Promise<T>): Promise<T> {
    const deadline = Date.now() + 60_000;
    for (let delay = 100; ; delay = Math.min(delay * 2, 1000)) {
      try {
        return await fn();
      } catch (e) {
        if (!(e instanceof ApiError && e.status === 503) || Date.now() > deadline) throw e;
        this.onBooting?.();
      }
      await new Promise((r) => setTimeout(r, delay));
    }
  }

  private call<T>(method: string, path: string, body?: unknown): Promise<T> {
    // ApiClient.request prefixes apiBase; the agent base already includes it.
    return this.booted(() => this.api.request<T>(method, this.base.slice(this.api.apiBase.length) + path, body));
  }

  /** The runtime's newest conversation, or a new one. */
  async session(fresh = false): Promise<string> {
    if (this.agentSession) return this.agentSession;
    if (!fresh) {
      const list = await this.call<Array<{ id: string; time?: { updated?: number; created?: number } }>>('GET', '/session').catch((e: unknown) => {
        if (e instanceof ApiError && e.status < 500) return [];
        throw e;
      });
      if (Array.isArray(list) && list.length) {
        const newest = [...list].sort((a, b) => (b.time?.updated ?? b.time?.created ?? 0) - (a.time?.updated ?? a.time?.created ?? 0))[0]!;
        return (this.agentSession = newest.id);
      }
    }
    const made = await this.call<{ id: string }>('POST', '/session', { title: 'svc chat' });
    return (this.agentSession = made.id);
  }

  /** Opens the event stream (before a prompt is sent, so nothing of the reply is missed). */
  async listen(): Promise<void> {
    if (this.events) return;
    this.events = await this.booted(async () => {
      const stream = openSse(`${this.base}/event`, this.headers());
      await stream.opened;
      return stream;
    });
  }

  async send(text: string): Promise<void> {
    const id = await this.session();
    if (this.prompt) await this.prompt(text, id);
    else await this.call('POST', `/session/${encodeURIComponent(id)}/prompt_async`, { parts: [{ type: 'text', text }] });
  }

  async abort(): Promise<void> {
    if (!this.agentSession) return;
    await this.call('POST', `/session/${encodeURIComponent(this.agentSession)}/abort`, {}).catch(() => {});
  }

  close(): void {
    this.events?.close();
  }

  /**
   * Reads events until the turn ends: `onText` gets each new piece of the assistant's
   * text, `onEvent` every event of this conversation (for --json).
   */
  async turn(on: { text?(delta: string): void; event?(e: AgentEvent): void; activity?(a: AgentActivity): void }): Promise<{ end: TurnEnd; error?: string }> {
    if (!this.events) throw new Error('listen() first');
    const mine = this.agentSession;
    for await (const m of this.events.messages) {
      let e: AgentEvent;
      try {
        e = JSON.parse(m.data) as AgentEvent;
      } catch {
        continue;
      }
      const p = e.properties ?? {};
      const info = p.info as { id?: string; role?: string; sessionID?: string } | undefined;
      const part = p.part as { id?: string; type?: string; text?: string; sessionID?: string; messageID?: string; synthetic?: boolean } | undefined;
      const sid = (p.sessionID as string | undefined) ?? info?.sessionID ?? part?.sessionID;
      if (sid !== mine) continue;
      on.event?.(e);
      if (e.type === 'message.updated' && info?.role === 'user' && info.id) this.userMessages.add(info.id);
      if (e.type === 'message.part.updated' && part?.type === 'text' && part.id && !part.synthetic && !this.userMessages.has(part.messageID ?? '')) {
        const seen = this.printed.get(part.id) ?? 0;
        const delta = typeof p.delta === 'string' ? p.delta : (part.text ?? '').slice(seen);
        this.printed.set(part.id, seen + delta.length);
        if (delta) on.text?.(delta);
      }
      if (e.type === 'message.part.updated' && part?.type === 'tool') {
        const state = (part as { state?: { status?: string } }).state;
        const name = (part as { tool?: unknown }).tool;
        if ((state?.status === 'running' || state?.status === 'pending') && typeof name === 'string') on.activity?.({ kind: 'tool', name });
        else if (state?.status === 'completed' || state?.status === 'error') on.activity?.({ kind: 'thinking' });
      }
      const st = p.status as { type?: string; attempt?: number; message?: string } | undefined;
      if (e.type === 'session.status' && st?.type === 'busy') on.activity?.({ kind: 'thinking' });
      if (e.type === 'session.status' && st?.type === 'retry') on.activity?.({ kind: 'retry', attempt: Number(st.attempt ?? 0), message: String(st.message ?? '') });
      if (e.type === 'session.error') {
        const err = p.error as { name?: string; data?: { message?: string } } | undefined;
        return { end: 'error', error: err?.data?.message ?? err?.name ?? 'the agent reported an error' };
      }
      const status = p.status as { type?: string } | undefined;
      if (e.type === 'session.idle' || (e.type === 'session.status' && status?.type === 'idle')) return { end: 'idle' };
    }
    return { end: 'closed' };
  }
}
