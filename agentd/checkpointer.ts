import type { Logger } from '../lib/logger.js';
import { fetchCheckpoint, packCheckpoint, restoreCheckpoint, runtimeVersion, sendCheckpoint, type WipSettings } from './wip.js';

/**
 * The daemon's checkpoints (pause and resume): restores what a stop saved before the
 * runtime starts, then saves the workspace and conversation at most every `intervalMs`
 * when they changed, and once more, with the runtime stopped, when the platform asks
 * (`POST /svc/checkpoint {"final":true}` before it stops the sandbox). Everything goes
 * through the sandbox's gateway to `…/sessions/:id/wip` with SVC_TOKEN.
 */
export interface CheckpointerOptions {
  settings: WipSettings;
  /** `${SVC_API_URL}/projects/<project>/sessions/<session>/wip` */
  url: string;
  token: string;
  runtimeCommand: string;
  intervalMs: number;
  logger: Logger;
  /** Stops the runtime (for a final checkpoint: its database closed cleanly). */
  stopRuntime: () => Promise<void>;
}

export class Checkpointer {
  private readonly version: Promise<string | null>;
  private timer: NodeJS.Timeout | undefined;
  private lastKey: string | undefined;
  private running: Promise<unknown> = Promise.resolve();
  private final = false;

  constructor(private readonly o: CheckpointerOptions) {
    this.version = runtimeVersion(o.runtimeCommand);
  }

  /**
   * The saved frame: null when nothing is saved, undefined when the server could not say
   * (after `attempts`, each bounded by `timeoutMs`). Never throws.
   */
  async fetchSaved(attempts = 3, timeoutMs = 300_000): Promise<Buffer | null | undefined> {
    try {
      const version = await this.version;
      for (let attempt = 1; ; attempt++) {
        try {
          return await fetchCheckpoint(this.o.url, this.o.token, version, timeoutMs);
        } catch (err) {
          if (attempt >= attempts) throw err;
          await new Promise((r) => setTimeout(r, 1000 * attempt));
        }
      }
    } catch (err) {
      this.o.logger[attempts > 1 ? 'error' : 'info']({ err: (err as Error).message }, attempts > 1 ? 'the saved session state could not be read; starting fresh' : 'no quick answer about saved session state');
      return undefined;
    }
  }

  /** Before the runtime starts: the saved workspace and conversation of `frame`. Never throws. */
  async restore(frame: Buffer): Promise<void> {
    const log = this.o.logger;
    try {
      const r = await restoreCheckpoint(this.o.settings, frame, log);
      if (r.conversation === 'version_mismatch') log.warn({ message: r.message }, 'resumed without the saved conversation');
      log.info({ workspace: r.workspace, conversation: r.conversation }, 'saved session state restored');
    } catch (err) {
      log.error({ err: (err as Error).message }, 'the saved session state could not be restored; starting fresh');
    }
  }

  start(): void {
    if (this.timer || this.o.intervalMs <= 0) return;
    this.timer = setInterval(() => void this.checkpoint(false).catch((err: Error) => this.o.logger.warn({ err: err.message }, 'checkpoint failed')), this.o.intervalMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  /** One checkpoint at a time; a periodic one is skipped when nothing changed or after the final one. */
  checkpoint(final: boolean): Promise<unknown> {
    const run = this.running.then(async () => {
      if (this.final && !final) return { skipped: 'final checkpoint taken' };
      if (final) {
        this.final = true;
        this.stop();
        await this.o.stopRuntime();
      }
      const packed = await packCheckpoint(this.o.settings, await this.version);
      if (!final && packed.key === this.lastKey) return { unchanged: true };
      const answer = await sendCheckpoint(this.o.url, this.o.token, packed.frame);
      this.lastKey = packed.key;
      this.o.logger.info({ wip_sha: packed.wipSha, skipped: packed.skipped.length, bytes: packed.frame.length, final }, 'checkpoint saved');
      return answer;
    });
    this.running = run.catch(() => undefined);
    return run;
  }
}
