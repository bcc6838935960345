import type { Argv } from 'yargs';
import type { Args } from '../../command-table.js';
import type { Factory } from '../../factory.js';
import { UsageError } from '../../errors.js';
import { askIntegrations, envFilePath, interactive, newEnv, readEnvFile, writeEnvFile } from '../../selfhost.js';

export const builder = (y: Argv) => y.option('yes', { alias: 'y', type: 'boolean', describe: 'Only create the config (generated keys); ask nothing' });

/** Creates the env file if missing and, on a terminal, asks about the optional integrations again. */
export const handler = async (argv: Args, f: Factory) => {
  const yes = !!argv.yes;
  const existing = await readEnvFile(f);
  const env = existing ?? newEnv();
  if (!yes && !interactive(f, yes)) {
    throw new UsageError("not a terminal: pass --yes to only create the config, or use 'svc self-host env set KEY=VALUE'");
  }
  const toFill = interactive(f, yes) ? await askIntegrations(f, env) : [];
  await writeEnvFile(f, env);
  f.io.err.write(`${existing ? 'Updated' : 'Created'} ${envFilePath(f)} (mode 0600)\n`);
  if (toFill.length) f.io.err.write(`Fill in: svc self-host env set ${toFill.map((k) => `${k}=...`).join(' ')}\n`);
  f.io.err.write("Apply with 'svc self-host start'.\n");
};
