/**
 * dotenv files, as `svc env push` reads them: `NAME=value` lines, an optional `export `
 * prefix, `#` comment lines and blank lines. Values: unquoted (trimmed; ` #...` starts a
 * comment), single-quoted (literal), double-quoted (escapes \n \r \t \" \\ \$, and may
 * span lines). A line that is none of these is an error naming its line number, so a
 * half-read file is never uploaded.
 */
export class DotenvError extends Error {
  constructor(
    readonly line: number,
    reason: string,
  ) {
    super(`line ${line}: ${reason}`);
    this.name = 'DotenvError';
  }
}

const ASSIGN = /^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s?(.*)$/s;
const ESCAPES: Record<string, string> = { n: '\n', r: '\r', t: '\t', '"': '"', '\\': '\\', $: '$' };

export function parseDotenv(text: string): Array<[string, string]> {
  const lines = text.replace(/^\uFEFF/, '').split(/\r?\n/);
  const out: Array<[string, string]> = [];
  for (let i = 0; i < lines.length; i++) {
    const lineNo = i + 1;
    const line = lines[i]!;
    if (/^\s*(#.*)?$/.test(line)) continue;
    const m = ASSIGN.exec(line);
    if (!m) {
      throw new DotenvError(lineNo, /^\s*(export\s+)?[^=\s]+\s*=/.test(line) ? 'the name must match [A-Za-z_][A-Za-z0-9_]*' : 'expected NAME=value');
    }
    const name = m[1]!;
    let rest = m[2]!.replace(/^\s+/, '');
    let value: string;
    if (rest.startsWith("'")) {
      const end = rest.indexOf("'", 1);
      if (end < 0) throw new DotenvError(lineNo, `unterminated single quote in ${name}`);
      value = rest.slice(1, end);
      rest = rest.slice(end + 1);
    } else if (rest.startsWith('"')) {
      let v = '';
      let j = 1;
      let closed = false;
      const start = lineNo;
      for (;;) {
        if (j >= rest.length) {
          // The value goes on: the next line belongs to it.
          if (i + 1 >= lines.length) throw new DotenvError(start, `unterminated double quote in ${name}`);
          rest = rest + '\n' + lines[++i]!;
          continue;
        }
        const ch = rest[j]!;
        if (ch === '\\' && j + 1 < rest.length) {
          const e = rest[j + 1]!;
          v += ESCAPES[e] ?? `\\${e}`;
          j += 2;
        } else if (ch === '"') {
          closed = true;
          j++;
          break;
        } else {
          v += ch;
          j++;
        }
      }
      if (!closed) throw new DotenvError(start, `unterminated double quote in ${name}`);
      value = v;
      rest = rest.slice(j);
      if (/\n/.test(rest)) rest = rest.slice(rest.lastIndexOf('\n') + 1);
    } else {
      const hash = rest.search(/\s#/);
      value = (hash >= 0 ? rest.slice(0, hash) : rest).trim();
      if (value.startsWith('#')) value = '';
      rest = '';
    }
    if (!/^\s*(#.*)?$/.test(rest)) throw new DotenvError(i + 1, `unexpected text after the quoted value of ${name}`);
    out.push([name, value]);
  }
  return out;
}
