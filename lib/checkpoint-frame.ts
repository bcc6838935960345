/**
 * The wire of a session checkpoint (pause and resume, docs/sessions.md), both ways between
 * a sandbox's daemon and the server: a magic line, one line of JSON (the header, which
 * gives the byte lengths), then the git bundle and the conversation archive back to back.
 * One body, so a checkpoint is accepted or refused whole.
 */
export const FRAME_MAGIC = 'SVCWIP1\n';
export const FRAME_CONTENT_TYPE = 'application/vnd.svc.checkpoint';
const MAX_HEADER = 1024 * 1024;

export interface FrameParts {
  header: Record<string, unknown>;
  bundle: Buffer;
  conversation: Buffer;
}

export function encodeFrame(header: Record<string, unknown>, bundle: Buffer, conversation: Buffer): Buffer {
  const h = JSON.stringify({ ...header, bundle_bytes: bundle.length, conversation_bytes: conversation.length });
  return Buffer.concat([Buffer.from(FRAME_MAGIC), Buffer.from(h + '\n'), bundle, conversation]);
}

/** Throws a plain Error with a reason for anything that is not exactly one frame. */
export function decodeFrame(body: Buffer): FrameParts {
  if (body.length < FRAME_MAGIC.length || body.subarray(0, FRAME_MAGIC.length).toString('latin1') !== FRAME_MAGIC) throw new Error('not a checkpoint');
  const start = FRAME_MAGIC.length;
  const nl = body.indexOf(0x0a, start);
  if (nl < 0 || nl - start > MAX_HEADER) throw new Error('checkpoint header missing or too long');
  let header: Record<string, unknown>;
  try {
    header = JSON.parse(body.subarray(start, nl).toString('utf8')) as Record<string, unknown>;
  } catch {
    throw new Error('checkpoint header is not JSON');
  }
  if (typeof header !== 'object' || header === null || Array.isArray(header)) throw new Error('checkpoint header is not an object');
  const b = header.bundle_bytes;
  const c = header.conversation_bytes;
  if (!Number.isSafeInteger(b) || !Number.isSafeInteger(c) || (b as number) < 0 || (c as number) < 0) throw new Error('checkpoint lengths missing');
  const rest = body.subarray(nl + 1);
  if (rest.length !== (b as number) + (c as number)) throw new Error('checkpoint lengths do not match its body');
  return { header, bundle: rest.subarray(0, b as number), conversation: rest.subarray(b as number) };
}

/** The runtime's conversation files: `[{path, data (base64)}]` as JSON (small; no tar needed in the sandbox). */
export interface ArchivedFile {
  path: string;
  data: string;
}

/** How much of a bundle's start `bundleStart` may look at. */
export const BUNDLE_START_MAX = 64 * 1024;

/**
 * A git bundle's head as `readFrameStream` judges it while it streams in: its signature,
 * then its ref lines, then an empty line, within the first 64 KiB. null: fine; '': need
 * more bytes; else the problem. Checked before git sees the file: git reads a bundle's
 * head a byte at a time, and a head of many megabytes costs it a long time.
 */
export function bundleHeadProblem(start: Buffer, complete: boolean): string | null {
  const sig = /^# v[23] git bundle\n/;
  const text = start.toString('latin1');
  if (text.length >= 16 && !sig.test(text)) return 'the bundle is not a git bundle';
  if (text.length < 16) return complete ? 'the bundle is not a git bundle' : '';
  if (text.includes('\n\n')) return null;
  return complete ? 'the bundle\'s head is too long or has no end' : '';
}

/** A frame refused while it streamed in: `tooLarge` for a body over its cap (413), else malformed (400). */
export class FrameError extends Error {
  constructor(
    message: string,
    readonly tooLarge = false,
  ) {
    super(message);
  }
}

export interface StreamedFrame {
  header: Record<string, unknown>;
  /** Bytes of the bundle, written to the caller's file (0: none, the file was not created). */
  bundleBytes: number;
  conversation: Buffer;
}

/**
 * Reads one frame from `body` as it streams in, holding at most its header (1 MiB) and the
 * conversation archive (`maxConversation`) in memory: the bundle goes to `bundleFile` as it
 * arrives, with backpressure. The lengths the header gives are checked against `maxBytes`
 * before the first byte of the bundle is read; a body longer or shorter than they say is
 * refused. On a refusal the body is left unread where it stands (paused), and the file removed
 * by the caller.
 */
export function readFrameStream(
  body: NodeJS.ReadableStream,
  opts: { maxBytes: number; maxConversation: number; openBundle: () => NodeJS.WritableStream; bundleStart?: (start: Buffer, complete: boolean) => string | null },
): Promise<StreamedFrame> {
  return new Promise<StreamedFrame>((resolve, reject) => {
    let head: Buffer[] = [];
    let headLen = 0;
    let header: Record<string, unknown> | null = null;
    let bundleLeft = 0;
    let convLeft = 0;
    let bundleBytes = 0;
    const conv: Buffer[] = [];
    const start: Buffer[] = [];
    let startSeen = 0;
    let out: NodeJS.WritableStream | null = null;
    let done = false;

    const cleanup = () => {
      body.removeListener('data', onData);
      body.removeListener('end', onEnd);
      body.removeListener('error', onError);
      body.removeListener('aborted', onAborted);
      body.removeListener('close', onAborted);
    };
    const fail = (err: FrameError) => {
      if (done) return;
      done = true;
      cleanup();
      body.pause();
      if (out) (out as unknown as { destroy?: () => void }).destroy?.();
      reject(err);
    };
    const finish = () => {
      if (done) return;
      done = true;
      cleanup();
      const result = { header: header!, bundleBytes, conversation: Buffer.concat(conv) };
      if (!out) return resolve(result);
      out.once('error', (e: Error) => reject(new FrameError(`checkpoint not stored: ${e.message}`)));
      out.end(() => resolve(result));
    };

    const onHeaderComplete = (h: Record<string, unknown>) => {
      const b = h.bundle_bytes;
      const c = h.conversation_bytes;
      if (!Number.isSafeInteger(b) || !Number.isSafeInteger(c) || (b as number) < 0 || (c as number) < 0) return fail(new FrameError('checkpoint lengths missing'));
      if ((c as number) > opts.maxConversation) return fail(new FrameError('the conversation is larger than the cap', true));
      if (headLen + (b as number) + (c as number) > opts.maxBytes) return fail(new FrameError('the checkpoint is larger than the cap', true));
      header = h;
      bundleLeft = b as number;
      convLeft = c as number;
      if (bundleLeft > 0) {
        out = opts.openBundle();
        out.on('error', (e: Error) => fail(new FrameError(`checkpoint not stored: ${e.message}`)));
        out.on('drain', () => !done && body.resume());
      }
    };

    const take = (chunk: Buffer) => {
      let rest = chunk;
      if (!header) {
        head.push(rest);
        headLen += rest.length;
        const all = Buffer.concat(head);
        const magic = Math.min(all.length, FRAME_MAGIC.length);
        if (all.subarray(0, magic).toString('latin1') !== FRAME_MAGIC.slice(0, magic)) return fail(new FrameError('not a checkpoint'));
        const nl = all.length > FRAME_MAGIC.length ? all.indexOf(0x0a, FRAME_MAGIC.length) : -1;
        if (nl < 0) {
          if (all.length - FRAME_MAGIC.length > MAX_HEADER) return fail(new FrameError('checkpoint header missing or too long'));
          head = [all];
          return;
        }
        if (nl - FRAME_MAGIC.length > MAX_HEADER) return fail(new FrameError('checkpoint header missing or too long'));
        let h: unknown;
        try {
          h = JSON.parse(all.subarray(FRAME_MAGIC.length, nl).toString('utf8'));
        } catch {
          return fail(new FrameError('checkpoint header is not JSON'));
        }
        if (typeof h !== 'object' || h === null || Array.isArray(h)) return fail(new FrameError('checkpoint header is not an object'));
        headLen = nl + 1;
        head = [];
        onHeaderComplete(h as Record<string, unknown>);
        if (done) return;
        rest = all.subarray(nl + 1);
      }
      if (rest.length > bundleLeft + convLeft) return fail(new FrameError('checkpoint lengths do not match its body'));
      if (bundleLeft > 0 && rest.length > 0) {
        const part = rest.subarray(0, bundleLeft);
        if (opts.bundleStart && startSeen < BUNDLE_START_MAX) {
          start.push(part.subarray(0, BUNDLE_START_MAX - startSeen));
          startSeen += Math.min(part.length, BUNDLE_START_MAX - startSeen);
          const problem = opts.bundleStart(Buffer.concat(start), startSeen >= BUNDLE_START_MAX || part.length === bundleLeft);
          if (problem === null) startSeen = BUNDLE_START_MAX; // judged: no more looking
          else if (problem !== '') return fail(new FrameError(problem));
        }
        bundleLeft -= part.length;
        bundleBytes += part.length;
        rest = rest.subarray(part.length);
        if (!out!.write(part)) body.pause();
      }
      if (rest.length > 0) {
        convLeft -= rest.length;
        conv.push(Buffer.from(rest));
      }
    };

    const onData = (chunk: Buffer) => {
      if (!done) take(chunk);
    };
    const onEnd = () => {
      if (!header) return fail(new FrameError('not a checkpoint'));
      if (bundleLeft + convLeft !== 0) return fail(new FrameError('checkpoint lengths do not match its body'));
      finish();
    };
    const onError = () => fail(new FrameError('the checkpoint could not be read'));
    const onAborted = () => fail(new FrameError('the checkpoint was cut off'));
    body.on('data', onData);
    body.on('end', onEnd);
    body.on('error', onError);
    body.on('aborted', onAborted);
    body.on('close', onAborted); // after 'end' nothing is listening any more
  });
}
