/**
 * `svc` in-process: resolve the command from the table, load only its module, let yargs
 * (strict) parse and validate, run it, and turn any failure into one stderr line and an
 * exit code. Returns the exit code; never exits the process (tests call this directly).
 */
import type { Argv } from 'yargs';
import { GLOBAL_VALUE_FLAGS, TOP, displayArgs, findSpec, isGroup, type Args, type CommandModule, type GroupSpec, type LeafSpec, type Spec } from './command-table.js';
import { EXIT_OK, UsageError, describeError, exitCodeFor } from './errors.js';
import type { Factory } from './factory.js';
import { groupHelp, treeHelp } from './help.js';
import { closest } from '../lib/spelling.js';

interface Scan {
  group?: GroupSpec;
  leaf?: LeafSpec;
  help: boolean;
  /** `svc <project-name>`: runs `init <project-name>`. */
  projectName?: string;
}

/** Same test as cli/commands/init.ts (kept here so scanning loads no command module). */
const PROJECT_NAME = /^(?!\.{1,2}$)[A-Za-z0-9._][A-Za-z0-9._-]{0,99}$/;

/** The command a word is a typo of (1 edit for short words, 2 for longer ones), if any. */
export function closestCommand(word: string, specs: Spec[] = TOP): string | undefined {
  return closest(word, specs.map((spec) => ({ name: spec.name, words: [spec.name, ...(spec.aliases ?? [])] })));
}

/** Finds the command words among the arguments, skipping flags (and global flags' values). */
export function scan(argv: string[]): Scan {
  const words: string[] = [];
  let help = false;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--') break;
    if (a === '--help' || a === '-h') help = true;
    if (a.startsWith('-') && a !== '-') {
      if (GLOBAL_VALUE_FLAGS.has(a)) i++;
      continue;
    }
    if (words.length < 2) words.push(a);
  }
  const out: Scan = { help };
  const [first, second] = words;
  if (first === undefined) return out;
  const top = findSpec(TOP, first);
  if (!top) {
    // `svc <project-name>` scaffolds a new directory, unless it looks like a typo of a command.
    const near = closestCommand(first);
    if (near) throw new UsageError(`unknown command "${first}" for "svc"; did you mean "${near}"?`);
    if (words.length === 1 && PROJECT_NAME.test(first)) return { ...out, leaf: findSpec(TOP, 'init') as LeafSpec, projectName: first };
    throw new UsageError(`unknown command "${first}" for "svc"; run 'svc help'`);
  }
  if (!isGroup(top)) return { ...out, leaf: top };
  out.group = top;
  if (second === undefined) return out;
  const leaf = findSpec(top.children, second);
  if (!leaf) {
    const near = closestCommand(second, top.children);
    throw new UsageError(`unknown command "${second}" for "svc ${top.name}"; ${near ? `did you mean "${near}"?` : `run 'svc ${top.name} --help'`}`);
  }
  return { ...out, leaf };
}

/** A flag `svc` itself (with no command) does not know: `--bogus` is a usage error, not help. */
function unknownTopFlag(argv: string[]): string | undefined {
  const known = new Set(['--help', '-h', '--version', '-v', '--json', '--no-color', ...GLOBAL_VALUE_FLAGS]);
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--') break;
    if (!a.startsWith('-') || a === '-') continue;
    const name = a.includes('=') ? a.slice(0, a.indexOf('=')) : a;
    if (GLOBAL_VALUE_FLAGS.has(a)) i++;
    if (!known.has(name)) return name;
  }
  return undefined;
}

class Dispatch {
  constructor(readonly argv: Args) {}
}

export async function main(argv: string[], f: Factory): Promise<number> {
  try {
    const s = scan(argv);
    if (!s.leaf) {
      if (s.group) {
        if (!s.help) {
          f.io.err.write(groupHelp(s.group));
          throw new UsageError(`missing subcommand for "svc ${s.group.name}"`);
        }
        f.io.out.write(groupHelp(s.group));
      } else if (unknownTopFlag(argv)) {
        throw new UsageError(`unknown flag ${unknownTopFlag(argv)} for "svc"; run 'svc help'`);
      } else if (argv.includes('--version') || argv.includes('-v')) {
        f.io.out.write(`svc version ${f.version}\n`);
      } else {
        f.io.out.write(treeHelp());
      }
      return EXIT_OK;
    }
    const leaf = s.leaf;
    if (s.projectName !== undefined) argv = ['init', ...argv];
    if (leaf.raw) {
      const words = argv.filter((a) => !a.startsWith('-'));
      if (s.help) {
        f.io.out.write(`Usage: svc ${leaf.name}${leaf.args ? ` ${displayArgs(leaf.args)}` : ''}\n\n${leaf.describe}\n`);
        return EXIT_OK;
      }
      const flags = argv.filter((a) => a.startsWith('-'));
      if (flags.length) throw new UsageError(`unknown flag ${flags[0]} for "svc ${leaf.name}"`);
      await (await leaf.load()).handler({ _: words, command: words.slice(1) }, f);
      return EXIT_OK;
    }
    const [mod, yargs] = await Promise.all([leaf.load(), import('./yargs.js').then((m) => m.loadYargs())]);
    const parsed = parse(yargs(argv, f.cwd), argv, s.group, leaf, mod, f);
    if (parsed.help !== undefined) {
      f.io.out.write(parsed.help);
      return EXIT_OK;
    }
    await mod.handler(parsed.argv!, f);
    return EXIT_OK;
  } catch (e) {
    f.io.err.write(`error: ${describeError(e)}\n`);
    return exitCodeFor(e);
  }
}

function parse(y: Argv, argv: string[], group: GroupSpec | undefined, leaf: LeafSpec, mod: CommandModule, f: Factory): { argv?: Args; help?: string } {
  const flagNames = new Set<string>();
  const leafCmd = (parent: Argv) =>
    parent.command(
      [leaf.name + (leaf.args ? ` ${leaf.args}` : ''), ...(leaf.aliases ?? [])],
      leaf.describe,
      (b: Argv) => {
        const built = mod.builder ? mod.builder(b) : b;
        // getOptions() is yargs' own (untyped) record of the flags: kept for typo suggestions.
        const opts = (built as unknown as { getOptions?: () => { key?: Record<string, unknown> } }).getOptions?.();
        for (const k of Object.keys(opts?.key ?? {})) flagNames.add(k);
        return built;
      },
      (argv: unknown) => {
        // Run outside yargs: a handler inside it would also make yargs render (and load)
        // the whole help machinery after every command.
        throw new Dispatch(argv as Args);
      },
    );
  y.scriptName('svc')
    .strict()
    .version(false)
    .help('help')
    .alias('help', 'h')
    .exitProcess(false)
    .showHelpOnFail(false)
    .wrap(Math.min(100, f.io.columns ?? 80))
    .fail((msg: string | null, err: Error | undefined) => {
      const path = `svc ${group ? `${group.name} ` : ''}${leaf.name}`;
      const unknown = msg ? /^Unknown arguments?: ([^,\s]+)/.exec(msg) : null;
      if (unknown) {
        // A typo of one of this command's flags: name the flag it was probably meant to be.
        const word = unknown[1]!.replace(/^-+/, '');
        const keys = [...flagNames].filter((k) => k.length > 1);
        const near = closest(word, keys.map((k) => ({ name: `--${k}`, words: [k] })));
        if (near) throw new UsageError(`unknown flag "--${word}" for "${path}"; did you mean "${near}"?`);
      }
      // yargs' wording for a missing positional names none; name it.
      if (msg && /^Not enough non-option arguments/.test(msg) && leaf.args) throw new UsageError(`missing argument ${leaf.args.split(' ')[0]} for "${path}"`);
      throw new UsageError((msg ?? err?.message ?? 'invalid arguments').replace(/\s*\n\s*/g, ' '));
    });
  if (group) {
    y.command([group.name, ...(group.aliases ?? [])], group.describe, (g: Argv) => leafCmd(g).demandCommand(1));
  } else {
    leafCmd(y);
  }
  let help: string | undefined;
  try {
    y.parse(argv, (_err: unknown, _argv: unknown, output: string) => {
      if (output) help = output + '\n';
    });
  } catch (e) {
    if (e instanceof Dispatch) return { argv: e.argv };
    throw e;
  }
  if (help !== undefined) return { help };
  throw new UsageError('invalid arguments');
}
