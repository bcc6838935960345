/**
 * Interactive questions, asked only when stdin and stdout are terminals. A numbered list
 * rather than an arrow-key widget: works in every terminal and reads from plain stdin.
 */
import { CancelError } from './errors.js';
import type { IOStreams } from './iostreams.js';

export interface Prompter {
  /** Index of the chosen option. */
  select(message: string, options: string[], defaultIndex?: number): Promise<number>;
  confirm(message: string, defaultYes?: boolean): Promise<boolean>;
}

/** One line per question, read from `io.in`, questions written to `io.err`. */
export function linePrompter(io: IOStreams): Prompter {
  const lines = lineReader(io.in);
  return {
    async select(message, options, defaultIndex = 0) {
      io.err.write(`? ${message}\n`);
      options.forEach((o, i) => io.err.write(`  ${i + 1}) ${o}\n`));
      for (;;) {
        io.err.write(`Choose 1-${options.length} [${defaultIndex + 1}]: `);
        const answer = await lines.next();
        if (answer === undefined) throw new CancelError('no selection made');
        const t = answer.trim();
        if (t === '') return defaultIndex;
        const n = Number(t);
        if (Number.isInteger(n) && n >= 1 && n <= options.length) return n - 1;
        const byName = options.findIndex((o) => o.split(/\s/)[0] === t);
        if (byName >= 0) return byName;
      }
    },
    async confirm(message, defaultYes = false) {
      io.err.write(`? ${message} ${defaultYes ? '[Y/n]' : '[y/N]'} `);
      const answer = await lines.next();
      if (answer === undefined) return false;
      const t = answer.trim().toLowerCase();
      if (t === '') return defaultYes;
      return t === 'y' || t === 'yes';
    },
  };
}

function lineReader(input: NodeJS.ReadableStream): { next(): Promise<string | undefined> } {
  let buf = '';
  let ended = false;
  let waiting: (() => void) | undefined;
  let attached = false;
  const attach = () => {
    if (attached) return;
    attached = true;
    input.setEncoding?.('utf8');
    input.on('data', (c: string | Buffer) => {
      buf += c.toString();
      waiting?.();
    });
    input.on('end', () => {
      ended = true;
      waiting?.();
    });
    input.resume?.();
  };
  return {
    async next() {
      attach();
      for (;;) {
        const nl = buf.indexOf('\n');
        if (nl >= 0) {
          const line = buf.slice(0, nl);
          buf = buf.slice(nl + 1);
          return line.replace(/\r$/, '');
        }
        if (ended) {
          if (buf === '') return undefined;
          const line = buf;
          buf = '';
          return line;
        }
        await new Promise<void>((r) => (waiting = r));
        waiting = undefined;
      }
    },
  };
}

/** All of stdin, for `--token -`. */
export async function readAll(input: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of input) chunks.push(typeof c === 'string' ? Buffer.from(c) : (c as Buffer));
  return Buffer.concat(chunks).toString('utf8');
}
