import type { Argv } from 'yargs';
import type { Args } from '../../command-table.js';
import { readConfig, updateConfig } from '../../config.js';
import { apiFor } from '../../context.js';
import { CliError } from '../../errors.js';
import type { Factory } from '../../factory.js';
import { BUILTIN_HOSTS } from '../../hosts.js';
import { runCapture, runThrough } from '../../install.js';
import { askIntegrations, composeArgs, detectCompose, envFilePath, interactive, newEnv, projectName, readEnvFile, writeEnvFile } from '../../selfhost.js';

export const builder = (y: Argv) =>
  y
    .option('yes', { alias: 'y', type: 'boolean', describe: 'Skip the optional integration questions' })
    .option('timeout', { type: 'number', default: 300, describe: 'Seconds to wait for the server to be ready' });

/**
 * Creates the config if missing (asking about optional integrations on a first
 * interactive start), starts the stack, waits for /readyz, registers the `selfhost` host
 * and logs in to it (a bootstrap token, minted once and kept while it works).
 */
export const handler = async (argv: Args, f: Factory) => {
  const yes = !!argv.yes;
  let env = await readEnvFile(f);
  if (!env) {
    env = newEnv();
    const toFill = interactive(f, yes) ? await askIntegrations(f, env) : [];
    await writeEnvFile(f, env);
    f.io.err.write(`Created ${envFilePath(f)} (mode 0600) with generated keys\n`);
    if (toFill.length) f.io.err.write(`Fill in later: svc self-host env set ${toFill.map((k) => `${k}=...`).join(' ')}\n`);
  }
  const runtime = await detectCompose(f);
  const port = env.get('SVC_PORT') || '8080';
  const probe = `http://127.0.0.1:${port}/readyz`;
  const hostUrl = `http://localhost:${port}`;

  f.io.err.write(`Starting svc with ${runtime.join(' ')} (project ${projectName(f)})\n`);
  const up = composeArgs(f, runtime, ['up', '-d']);
  const code = await runThrough(f, up.cmd, up.args, up.env);
  if (code !== 0) throw new CliError(`${runtime.join(' ')} up failed (exit ${code})`, "see 'svc self-host logs'");

  f.io.err.write(`Waiting for ${probe}\n`);
  const started = Date.now();
  const deadline = started + Number(argv.timeout ?? 300) * 1000;
  let lastNote = started;
  for (;;) {
    const ok = await f
      .fetch(probe, { method: 'GET', headers: {} })
      .then((r) => r.status === 200, () => false);
    if (ok) break;
    if (Date.now() > deadline) throw new CliError(`the server did not become ready at ${probe} in ${argv.timeout ?? 300} s`, "see 'svc self-host logs api'");
    if (Date.now() - lastNote >= 5000) {
      lastNote = Date.now();
      f.io.err.write(`  still starting (${Math.round((Date.now() - started) / 1000)} s)\n`);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  f.io.err.write(`Ready in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);

  // Log in: keep a stored token that still works; otherwise mint one with admin bootstrap.
  const stored = (await readConfig(f.configPath)).hosts.selfhost?.token;
  let token: string | undefined;
  let me = stored ? await apiFor(f, hostUrl, stored).me().catch(() => undefined) : undefined;
  if (me) token = stored;
  else {
    const email = env.get('SVC_ADMIN_EMAIL') || 'admin@selfhost.local';
    const boot = composeArgs(f, runtime, ['exec', '-T', 'api', 'svc-server', 'admin', 'bootstrap', '--email', email]);
    const r = await runCapture(f, boot.cmd, boot.args, boot.env);
    token = r.stdout.trim().split('\n').pop()?.trim();
    if (r.code !== 0 || !token?.startsWith('svc_pat_')) {
      throw new CliError(`could not mint a token with svc-server admin bootstrap (exit ${r.code})`, r.stderr.trim().split('\n').pop() ?? '');
    }
    me = await apiFor(f, hostUrl, token).me();
  }
  const user = me.user.email;
  await updateConfig(f.configPath, (c) => {
    const entry = { ...c.hosts.selfhost, token: token!, user };
    if (hostUrl !== BUILTIN_HOSTS.selfhost) entry.url = hostUrl;
    else delete entry.url;
    c.hosts.selfhost = entry;
    c.active_host = 'selfhost';
  });
  f.io.err.write(`svc is running at ${hostUrl}; logged in to host selfhost as ${user}\n`);
};
