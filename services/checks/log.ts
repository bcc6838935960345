import { open, stat } from 'node:fs/promises';

/** Shorter values would mask ordinary words; a secret this short protects nothing anyway. */
const MIN_MASKED = 4;
const MASK = '***';

/** Every known secret value in `text` replaced with ***, longest first (one may contain another). */
export function maskSecrets(text: string, values: string[]): string {
  let out = text;
  for (const v of [...new Set(values)].filter((x) => x.length >= MIN_MASKED).sort((a, b) => b.length - a.length)) out = out.split(v).join(MASK);
  return out;
}

/**
 * A piece of a secret cut by the log's bound: the end of the kept head that begins a
 * secret, the start of the kept tail that ends one, masked too.
 */
function maskCutEdges(text: string, values: string[], edge: 'end' | 'start'): string {
  for (const v of values) {
    for (let k = v.length - 1; k >= 3; k--) {
      if (edge === 'end' && text.endsWith(v.slice(0, k))) return text.slice(0, text.length - k) + MASK;
      if (edge === 'start' && text.startsWith(v.slice(v.length - k))) return MASK + text.slice(k);
    }
  }
  return text;
}

/**
 * A run's output as it is kept: at most `maxBytes` (the head and the tail when longer,
 * with a line saying what was left out), every known secret value masked. Read from the
 * file in two bounded pieces: a check that prints gigabytes costs no memory here.
 */
export async function boundedMaskedLog(file: string, maxBytes: number, secrets: string[]): Promise<{ body: string; truncated: boolean }> {
  const size = await stat(file).then((s) => s.size, () => -1);
  if (size < 0) return { body: '', truncated: false };
  const fh = await open(file, 'r');
  try {
    const read = async (pos: number, len: number) => {
      const buf = Buffer.alloc(len);
      const { bytesRead } = await fh.read(buf, 0, len, pos);
      return buf.subarray(0, bytesRead).toString('utf8');
    };
    if (size <= maxBytes) return { body: maskSecrets(await read(0, size), secrets), truncated: false };
    const half = Math.floor(maxBytes / 2);
    const head = maskCutEdges(maskSecrets(await read(0, half), secrets), secrets, 'end');
    const tail = maskCutEdges(maskSecrets(await read(size - half, half), secrets), secrets, 'start');
    return { body: `${head}\n[... ${size - 2 * half} bytes left out ...]\n${tail}`, truncated: true };
  } finally {
    await fh.close();
  }
}
