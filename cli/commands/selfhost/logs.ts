import type { Argv } from 'yargs';
import type { Args } from '../../command-table.js';
import { CliError, UsageError } from '../../errors.js';
import type { Factory } from '../../factory.js';
import { runThrough } from '../../install.js';
import { composeArgs, detectCompose, readEnvFile } from '../../selfhost.js';

const SERVICES = ['api', 'worker', 'migrate', 'postgres'];

export const builder = (y: Argv) =>
  y
    .positional('service', { type: 'string', describe: `One of ${SERVICES.join(', ')} (default: all)` })
    .option('follow', { type: 'boolean', default: true, describe: 'Keep following (--no-follow prints and exits)' });

export const handler = async (argv: Args, f: Factory) => {
  const service = argv.service === undefined ? undefined : String(argv.service);
  if (service && !SERVICES.includes(service)) throw new UsageError(`unknown service "${service}": want one of ${SERVICES.join(', ')}`);
  if (!(await readEnvFile(f))) throw new CliError('no self-host stack configured here', "start one with 'svc self-host start'");
  const runtime = await detectCompose(f);
  const logs = composeArgs(f, runtime, ['logs', ...(argv.follow === false ? [] : ['--follow']), '--tail', '200', ...(service ? [service] : [])]);
  const code = await runThrough(f, logs.cmd, logs.args, logs.env, true);
  if (code !== 0) throw new CliError(`${runtime.join(' ')} logs failed (exit ${code})`);
};
