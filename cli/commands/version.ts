import type { Args } from '../command-table.js';
import type { Factory } from '../factory.js';

export async function handler(_argv: Args, f: Factory): Promise<void> {
  f.io.out.write(`svc version ${f.version}\n`);
}
