/**
 * Reads the token usage out of an OpenAI response as it passes through, without holding
 * the stream: SSE `data:` lines are scanned as they complete and the last `usage` seen
 * wins (the stream's usage chunk); a JSON body is read once at the end.
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
  private readonly decoder = new TextDecoder();

  /** Feeds one chunk of an SSE body. */
  feed(chunk: Uint8Array): void {
    const text = this.partial + this.decoder.decode(chunk, { stream: true });
    const lines = text.split('\n');
    this.partial = lines.pop() ?? '';
    for (const line of lines) {
      if (this.skipping) {
        this.skipping = false;
        continue;
      }
      this.line(line);
    }
    if (this.partial.length > MAX_LINE) {
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

  private line(raw: string): void {
    const line = raw.trim();
    if (!line.startsWith('data:') || !line.includes('"usage"')) return;
    try {
      const u = usageOf((JSON.parse(line.slice(5)) as { usage?: unknown }).usage);
      if (u) this.last = u;
    } catch {
      /* not JSON: not a usage chunk */
    }
  }
}

function usageOf(u: unknown): TokenUsage | null {
  if (!u || typeof u !== 'object') return null;
  const { prompt_tokens: i, completion_tokens: o } = u as { prompt_tokens?: unknown; completion_tokens?: unknown };
  const n = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) && v >= 0 ? Math.floor(v) : 0);
  if (i === undefined && o === undefined) return null;
  return { input_tokens: n(i), output_tokens: n(o) };
}
