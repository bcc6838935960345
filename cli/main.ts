#!/usr/bin/env node
/**
 * `svc` entry point. Kept tiny: `svc version` answers without loading anything else, and
 * every other command loads only what it needs (see app.ts, command-table.ts).
 */
import { readFileSync } from 'node:fs';

const argv = process.argv.slice(2);

function version(): string {
  try {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version?: string };
    return pkg.version ?? '0.0.0';
  } catch {
    return '0.0.0';
  }
}

async function run(): Promise<number> {
  if (argv.length === 1 && (argv[0] === 'version' || argv[0] === '--version')) {
    process.stdout.write(`svc version ${version()}\n`);
    return 0;
  }
  const [{ main }, { systemFactory }] = await Promise.all([import('./app.js'), import('./system.js')]);
  return main(argv, systemFactory(version()));
}

run().then(
  (code) => {
    process.exitCode = code;
    // Nothing may keep the process alive once the command is done (a paused stdin, a
    // keep-alive socket); flush stdout first.
    process.stdout.write('', () => process.exit(code));
  },
  (e: unknown) => {
    process.stderr.write(`error: ${e instanceof Error ? e.message : String(e)}\n`);
    process.exit(1);
  },
);
