import type { Argv } from 'yargs';
import type { Args } from '../../command-table.js';
import { CliError, UsageError } from '../../errors.js';
import type { Factory } from '../../factory.js';
import { envFilePath, isSecret, mask, newEnv, readEnvFile, validKey, writeEnvFile } from '../../selfhost.js';

export const builder = (y: Argv) =>
  y
    .positional('action', { type: 'string', describe: 'ls, or set KEY=VALUE ...' })
    .positional('pairs', { type: 'string', array: true, describe: 'KEY=VALUE pairs (set)' });

/** `env ls` (populated secrets masked) and `env set KEY=VALUE ...` on the self-host env file. */
export const handler = async (argv: Args, f: Factory) => {
  const action = String(argv.action);
  const pairs = ((argv.pairs as string[] | undefined) ?? []).map(String);
  if (action === 'ls' || action === 'list') {
    if (pairs.length) throw new UsageError('env ls takes no arguments');
    const env = await readEnvFile(f);
    if (!env) throw new CliError('no self-host config yet', "create it with 'svc self-host configure' or 'svc self-host start'");
    for (const [k, v] of env.entries()) f.io.out.write(`${k}=${isSecret(k) ? mask(v) : v}\n`);
    return;
  }
  if (action !== 'set') throw new UsageError(`unknown env action "${action}": want ls or set`);
  if (pairs.length === 0) throw new UsageError('env set needs KEY=VALUE');
  const parsed = pairs.map((p) => {
    const i = p.indexOf('=');
    const key = i > 0 ? p.slice(0, i) : '';
    if (!validKey(key)) throw new UsageError(`invalid assignment "${p}": want KEY=VALUE with KEY of letters, digits and _`);
    const value = p.slice(i + 1);
    if (/[\r\n]/.test(value)) throw new UsageError(`the value of ${key} has a line break; the env file holds one line per variable`);
    return [key, value] as const;
  });
  const env = (await readEnvFile(f)) ?? newEnv();
  for (const [k, v] of parsed) env.set(k, v);
  await writeEnvFile(f, env);
  f.io.err.write(`Set ${parsed.map(([k]) => k).join(', ')} in ${envFilePath(f)}; 'svc self-host start' applies it.\n`);
};
