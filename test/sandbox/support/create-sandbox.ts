#!/usr/bin/env node
/**
 * Creates one sandbox with a provider and exits at once, printing the handle as JSON: a
 * server process that goes away after starting a sandbox. Used to prove that sandboxes
 * outlive their creator and that another process re-attaches to them.
 *
 *   node create-sandbox.js bwrap '<provider options JSON>' '<SandboxSpec JSON>'
 */
import { createBwrapProvider } from '../../../infra/sandbox/bwrap.js';

const [kind, optsJson, specJson] = process.argv.slice(2);
if (kind !== 'bwrap' || !optsJson || !specJson) {
  process.stderr.write('usage: create-sandbox bwrap <opts-json> <spec-json>\n');
  process.exit(2);
}
const provider = createBwrapProvider(JSON.parse(optsJson));
provider.create(JSON.parse(specJson)).then(
  (handle) => {
    process.stdout.write(JSON.stringify(handle) + '\n');
    process.exit(0);
  },
  (err: Error) => {
    process.stderr.write(`${err.message}\n`);
    process.exit(1);
  },
);
