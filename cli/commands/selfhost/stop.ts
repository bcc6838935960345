import type { Argv } from 'yargs';
import type { Args } from '../../command-table.js';
import { CliError } from '../../errors.js';
import type { Factory } from '../../factory.js';
import { runThrough } from '../../install.js';
import { composeArgs, detectCompose, projectName, readEnvFile } from '../../selfhost.js';

export const builder = (y: Argv) => y;

/** `compose down` without `-v`: the containers go, the volumes (database, repositories) stay. */
export const handler = async (_argv: Args, f: Factory) => {
  if (!(await readEnvFile(f))) throw new CliError('no self-host stack configured here', "start one with 'svc self-host start'");
  const runtime = await detectCompose(f);
  const down = composeArgs(f, runtime, ['down']);
  const code = await runThrough(f, down.cmd, down.args, down.env);
  if (code !== 0) throw new CliError(`${runtime.join(' ')} down failed (exit ${code})`);
  const project = projectName(f);
  f.io.err.write(`Stopped. The data is kept (volumes ${project}_pgdata and ${project}_data); 'svc self-host start' brings it back.\n`);
};
