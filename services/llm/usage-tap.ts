/**
 * Reads the token usage out of an OpenAI response as it passes through, without holding
 * the stream: SSE `data:` lines are scanned as they complete and the last `usage` seen
 * wins (the stream's usage chunk); a JSON body is read once at the end. It also counts the
 * characters generated (text, reasoning, tool calls), which is what a stream that ends
 * without its usage chunk is charged for (services/llm/ledger.ts).
 */
export interface TokenUsage {
  input_tokens: number;
  output_tokens: number;
}

/** A partial line longer than this is dropped: usage chunks are small. */
const MAX_LINE = 1024 * 1024;

export class UsageTap {
  private partial = '';
  private skipping = false;
  private last: TokenUsage | null = null;
  /** Characters of output seen so far. */
  outputChars = 0;
  private readonly decoder = new TextDecoder();

  /** Feeds one chunk of an SSE body. */
  feed(chunk: Uint8Array): void {
    const text = this.partial + this.decoder.decode(chunk, { stream: true });
    const lines = text.split('\n');
    this.partial = lines.pop() ?? '';
    for (const line of lines) {
      if (this.skipping) {
        this.skipping = false;
        this.outputChars += line.length;
        continue;
      }
      this.line(line);
    }
    if (this.partial.length > MAX_LINE) {
      this.outputChars += this.partial.length; // generated all the same
      this.partial = '';
      this.skipping = true; // the rest of that line is not a usage chunk either
    }
  }

  /** The usage once the body ended. */
  end(): TokenUsage | null {
    if (this.partial && !this.skipping) this.line(this.partial);
    this.partial = '';
    return this.last;
  }

  /** A whole JSON (non-streamed) body. */
  static ofJson(text: string): TokenUsage | null {
    try {
      return usageOf((JSON.parse(text) as { usage?: unknown }).usage);
    } catch {
      return null;
    }
  }

  /** The characters a whole JSON body generated (its choices' messages). */
  static outputCharsOfJson(text: string): number {
    try {
      const choices = (JSON.parse(text) as { choices?: unknown }).choices;
      return Array.isArray(choices) ? choices.reduce((n: number, c: { message?: unknown }) => n + generatedChars(c?.message), 0) : 0;
    } catch {
      return text.length;
    }
  }

  private line(raw: string): void {
    const line = raw.trim();
    if (!line.startsWith('data:') || line === 'data: [DONE]') return;
    try {
      const chunk = JSON.parse(line.slice(5)) as { usage?: unknown; choices?: unknown };
      const u = usageOf(chunk.usage);
      if (u) this.last = u;
      if (Array.isArray(chunk.choices)) for (const c of chunk.choices as { delta?: unknown }[]) this.outputChars += generatedChars(c?.delta);
    } catch {
      // Not JSON: counted as generated, so a stream the upstream garbles is not free.
      this.outputChars += line.length - 5;
    }
  }
}

/** Characters of a message or delta: its content, reasoning and tool calls' names and arguments. */
function generatedChars(m: unknown): number {
  if (!m || typeof m !== 'object') return 0;
  const o = m as Record<string, unknown>;
  const len = (v: unknown) => (typeof v === 'string' ? v.length : 0);
  let n = len(o.content) + len(o.reasoning_content) + len(o.reasoning) + len(o.refusal);
  if (Array.isArray(o.content)) n += JSON.stringify(o.content).length;
  if (Array.isArray(o.tool_calls)) {
    for (const t of o.tool_calls as { function?: { name?: unknown; arguments?: unknown } }[]) n += len(t?.function?.name) + len(t?.function?.arguments);
  }
  return n;
}

function usageOf(u: unknown): TokenUsage | null {
  if (!u || typeof u !== 'object') return null;
  const { prompt_tokens: i, completion_tokens: o } = u as { prompt_tokens?: unknown; completion_tokens?: unknown };
  const n = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) && v >= 0 ? Math.floor(v) : 0);
  if (i === undefined && o === undefined) return null;
  return { input_tokens: n(i), output_tokens: n(o) };
}
