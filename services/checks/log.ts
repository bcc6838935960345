import { open, stat } from 'node:fs/promises';

/** Shorter values would mask ordinary words; a secret this short protects nothing anyway. */
const MIN_MASKED = 4;
const MASK = '***';

/**
 * The spellings of a secret a command prints by accident: itself, its base64 (padded or
 * not, and the stable prefix the encoding of a longer text starting with it shares, as
 * `echo "$S" | base64` gives), its base64url, its hex (either case) and its URL encoding
 * (either case of escape, `+` for spaces, a form's encoding). Masking stops accidents, not a check that wants
 * to leak a secret (it can print it reversed, split, or encrypted): docs/checks.md.
 */
export function secretForms(value: string): string[] {
  const bytes = Buffer.from(value, 'utf8');
  const aligned = bytes.subarray(0, bytes.length - (bytes.length % 3));
  const b64 = bytes.toString('base64');
  const url = encodeURIComponent(value);
  const forms = [
    value,
    b64,
    b64.replace(/=+$/, ''),
    aligned.toString('base64'),
    bytes.toString('base64url'),
    aligned.toString('base64url'),
    bytes.toString('hex'),
    bytes.toString('hex').toUpperCase(),
    url,
    url.replace(/%[0-9A-F]{2}/g, (e) => e.toLowerCase()),
    url.replace(/%20/g, '+'),
    new URLSearchParams([['', value]]).toString().slice(1), // a form's encoding: also ! ' ( ) ~ escaped
  ];
  return [...new Set(forms)].filter((f) => f.length >= MIN_MASKED);
}

/** Every spelling of a value worth masking, longest first (one may contain another). */
const maskable = (values: string[]) =>
  [...new Set(values.filter((x) => x.length >= MIN_MASKED).flatMap(secretForms))].sort((a, b) => b.length - a.length);

/** Every known secret value in `text`, in each of its `secretForms`, replaced with ***. */
export function maskSecrets(text: string, values: string[]): string {
  let out = text;
  for (const v of maskable(values)) out = out.split(v).join(MASK);
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
    const forms = maskable(secrets);
    const head = maskCutEdges(maskSecrets(await read(0, half), secrets), forms, 'end');
    const tail = maskCutEdges(maskSecrets(await read(size - half, half), secrets), forms, 'start');
    return { body: `${head}\n[... ${size - 2 * half} bytes left out ...]\n${tail}`, truncated: true };
  } finally {
    await fh.close();
  }
}
