import type { AgentActivity } from './agent-chat.js';

/**
 * `svc sessions chat`'s progress on stderr (gh's convention: progress goes to stderr, shown
 * when stderr is a terminal and not with `--json`; `--progress` / `--no-progress` decide
 * otherwise). On a terminal it is one status line rewritten in place and cleared before
 * the reply's text; elsewhere (forced with `--progress`) one plain line per change.
 */
export interface ProgressSink {
  write(s: string): unknown;
}

export const describeActivity = (a: AgentActivity): string =>
  a.kind === 'starting' ? 'starting'
  : a.kind === 'thinking' ? 'thinking'
  : a.kind === 'tool' ? `running a tool: ${a.name}`
  : `retrying (attempt ${a.attempt})${a.message ? `: ${a.message}` : ''}`;

export class ChatProgress {
  private current = '';

  constructor(
    private readonly err: ProgressSink,
    private readonly enabled: boolean,
    /** A terminal: rewrite one line in place. */
    private readonly live: boolean,
    /** Called before a status line is drawn (the caller ends a half-written reply line). */
    private readonly beforeShow: () => void = () => {},
  ) {}

  show(a: AgentActivity): void {
    const text = describeActivity(a);
    if (!this.enabled || text === this.current) return;
    this.current = text;
    this.beforeShow();
    this.err.write(this.live ? `\r\x1b[K… ${text}` : `… ${text}\n`);
  }

  /** Before the reply's text is written (and at the end of a turn). */
  clear(): void {
    if (this.live && this.current) this.err.write('\r\x1b[K');
    this.current = '';
  }
}
