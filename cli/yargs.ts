/**
 * Loading yargs cheaply. `import 'yargs'` costs ~90 ms on Node 20: its ESM platform shim
 * eagerly imports cliui, string-width (a large Unicode regex) and y18n, which only help
 * rendering needs. yargs is built as `YargsFactory(platformShim)`, so we hand it our own
 * shim whose cliui / stringWidth load on first use (`require(esm)`, Node >= 20.19) and
 * whose y18n is English-only `util.format`. If yargs' internal layout ever moves, we fall
 * back to the stock entry point: slower, same behaviour.
 */
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { format, inspect } from 'node:util';
import { notStrictEqual, strictEqual } from 'node:assert';
import { readFileSync, readdirSync } from 'node:fs';
import type { Argv } from 'yargs';

type YargsFn = (args?: string[], cwd?: string) => Argv;

export async function loadYargs(): Promise<YargsFn> {
  try {
    const entry = import.meta.resolve('yargs');
    const [{ YargsFactory }, { default: Parser }] = (await Promise.all([
      import(new URL('./build/lib/yargs-factory.js', entry).href),
      import(pathToFileURL(createRequire(entry).resolve('yargs-parser')).href),
    ])) as [{ YargsFactory: (shim: unknown) => YargsFn }, { default: unknown }];
    return YargsFactory(lazyShim(entry, Parser));
  } catch {
    return ((await import('yargs')) as unknown as { default: YargsFn }).default;
  }
}

function lazyShim(entryUrl: string, Parser: unknown): unknown {
  const require = createRequire(entryUrl);
  let cliui: unknown;
  let stringWidth: ((s: string) => number) | undefined;
  const y18n = {
    __: (s: string, ...args: unknown[]) => format(s, ...args),
    __n: (singular: string, plural: string, n: number, ...args: unknown[]) => format(n === 1 ? singular : plural, ...args),
    setLocale: () => {},
    getLocale: () => 'en',
    updateLocale: () => {},
  };
  return {
    assert: { notStrictEqual, strictEqual },
    get cliui() {
      cliui ??= (require('cliui') as { default?: unknown }).default ?? require('cliui');
      return cliui;
    },
    // No config-file discovery (`pkgConf`, `.config()`): the CLI does not use them.
    findUp: () => undefined,
    getEnv: (key: string) => process.env[key],
    inspect,
    getProcessArgvBin: () => process.argv.slice(2),
    mainFilename: process.cwd(),
    Parser,
    path,
    process: {
      argv: () => process.argv,
      cwd: process.cwd,
      emitWarning: (warning: string, type: string) => process.emitWarning(warning, type),
      execPath: () => process.execPath,
      exit: (code: number) => process.exit(code),
      nextTick: process.nextTick,
      stdColumns: typeof process.stdout.columns !== 'undefined' ? process.stdout.columns : null,
    },
    readFileSync,
    readdirSync,
    require,
    getCallerFile: () => fileURLToPath(import.meta.url),
    stringWidth: (s: string) => {
      stringWidth ??= (require('string-width') as { default: (s: string) => number }).default;
      return stringWidth(s);
    },
    y18n,
  };
}
