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
