#!/usr/bin/env node
/**
 * svc-server: start | api | worker | migrate | projections rebuild [--verify] |
 * admin bootstrap --email E [--name N] [--password-stdin] [--init] | admin set-password --email E. Configuration comes from the environment
 * (infra/config.ts); see README.md and docs/operations.md.
 */
import yargs from 'yargs';
import { hideBin } from 'yargs/helpers';
import { ConfigError, configWarnings, loadConfig, type Config } from '../infra/config.js';
import { createLogger, type Logger } from '../lib/logger.js';
import type { Database } from '../infra/db/database.js';
import { lockDataDir } from '../infra/data-dir-lock.js';
import { listenProblem, portProblemMessage } from '../lib/net.js';
import { closest } from '../lib/spelling.js';

// The rest loads once a command runs: a second `start` on a locked data dir (or a port in
// use) answers before the whole server's modules are read, in well under 2 s.
const openDatabase = async (...a: Parameters<typeof import('../infra/db/database.js').openDatabase>) => (await import('../infra/db/database.js')).openDatabase(...a);
const migrate = async (...a: Parameters<typeof import('../infra/db/migrate.js').migrate>) => (await import('../infra/db/migrate.js')).migrate(...a);

/** Every `admin` action with its usage; the command's summary line lists them all. */
const ADMIN_ACTIONS = {
  bootstrap: 'bootstrap --email E',
  'set-password': 'set-password --email E',
  'rotate-key': 'rotate-key',
} as const;

async function readPassword(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  const pw = Buffer.concat(chunks).toString('utf8').replace(/\r?\n$/, '');
  if (!pw) throw new Error('no password on standard input (pipe it in: --password-stdin)');
  return pw;
}

function setup(opts: { quietLogs?: boolean } = {}): { config: Config; logger: Logger } {
  const config = loadConfig();
  // Admin commands print their result on stdout; their logs go to stderr.
  const logger = opts.quietLogs
    ? createLogger({ level: process.env.LOG_LEVEL ?? 'warn', pretty: false, destination: process.stderr })
    : createLogger({ level: config.LOG_LEVEL });
  return { config, logger };
}

async function serve(roles: { api: boolean; worker: boolean }): Promise<void> {
  const { config, logger } = setup();
  // One server per embedded database, decided before anything starts (PostgreSQL, workers,
  // listeners): a second one fails here, naming the first. Replicas on DATABASE_URL share no lock.
  const lock = config.DATABASE_URL ? undefined : await lockDataDir(config.dataDir);
  // A port in use fails before any worker could run a job under this process's configuration.
  const portProblem = config.PORT === 0 ? null : await listenProblem(config.PORT, config.HOST);
  if (portProblem) throw new Error(portProblemMessage(config.PORT, config.HOST, portProblem));
  if (!config.DATABASE_URL && !(roles.api && roles.worker)) {
    logger.warn('running one role on the embedded database: scale-out roles are meant for DATABASE_URL');
  }
  for (const w of configWarnings(config)) logger.warn(w);
  // The handlers are in place before the start: /readyz answers as soon as the HTTP server
  // listens, while the workers still start, and a SIGTERM then must stop what started
  // (after the start finishes), not kill the process with the signal's default action.
  const starting = import('./server.js').then(({ startServer }) => startServer({ config, logger, roles }));
  let signals = 0;
  const shutdown = (signal: string) => {
    if (++signals > 1) process.exit(1);
    logger.info({ signal }, 'shutting down');
    starting
      .then((server) => server.stop())
      .then(() => lock?.release())
      .then(
        () => process.exit(0),
        (err) => {
          logger.error({ err }, 'shutdown failed');
          process.exit(1);
        },
      );
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
  await starting;
}

async function withDatabase<T>(fn: (db: Database, logger: Logger) => Promise<T>, opts: { createCluster?: boolean } = {}): Promise<T> {
  const { config, logger } = setup({ quietLogs: true });
  const { NoEmbeddedClusterError } = await import('../infra/db/embedded.js');
  const database = await openDatabase(config, logger, { poolSize: 2, ...opts }).catch((err: unknown) => {
    if (err instanceof NoEmbeddedClusterError) {
      // Run from another directory, a relative data dir is a new, empty one: its token would be
      // refused by the running server. Say which directory was looked at instead.
      throw new Error(
        `no svc database in ${err.dataDir} (the data dir: SVC_DATA_DIR, or its default relative to this directory); run this where the server runs or set SVC_DATA_DIR, or pass --init to create a new database there`,
      );
    }
    throw err;
  });
  try {
    await migrate(database.db, { logger });
    return await fn(database, logger);
  } finally {
    await database.close();
  }
}

const COMMANDS = ['start', 'api', 'worker', 'migrate', 'projections', 'admin'] as const;

/** A first word that is no command: a usage error with the nearest command, as `svc` does. */
function unknownCommand(argv: string[]): string | undefined {
  const word = argv.find((a) => !a.startsWith('-'));
  if (word === undefined || (COMMANDS as readonly string[]).includes(word)) return undefined;
  const near = closest(word, COMMANDS.map((c) => ({ name: c, words: [c] })));
  return `unknown command "${word}" for "svc-server"; ${near ? `did you mean "${near}"?` : `run 'svc-server --help'`}`;
}

export async function main(argv: string[]): Promise<void> {
  const unknown = unknownCommand(argv);
  if (unknown) {
    process.stderr.write(`error: ${unknown}\n`);
    process.exit(2);
  }
  await yargs(argv)
    .scriptName('svc-server')
    .usage('$0 <command>')
    .command('start', 'API and workers in one process (embedded PostgreSQL unless DATABASE_URL)', {}, () => serve({ api: true, worker: true }))
    .command('api', 'the HTTP API only (scale-out; needs DATABASE_URL)', {}, () => serve({ api: true, worker: false }))
    .command('worker', 'the job workers only (scale-out; needs DATABASE_URL)', {}, () => serve({ api: false, worker: true }))
    .command('migrate', 'apply database migrations and exit', {}, async () => {
      const applied = await withDatabase(async (d, logger) => migrate(d.db, { logger }));
      process.stdout.write(`migrations up to date${applied.length ? ` (applied ${applied.join(', ')})` : ''}\n`);
    })
    .command('projections <action>', 'projection maintenance', (y) =>
      y
        .positional('action', { choices: ['rebuild'] as const, demandOption: true })
        .option('verify', { type: 'boolean', default: false, describe: 'replay into scratch tables and compare; change nothing' }),
      async (args) => {
        const { rebuildProjections } = await import('../projections/rebuild.js');
        const report = await withDatabase((d) => rebuildProjections(d.db, { verify: args.verify }));
        process.stdout.write(
          `${args.verify ? 'verified' : 'rebuilt'} change_requests: ${report.rows} rows from ${report.events} events in ${report.millis} ms (project_sessions: ${report.sessions} rows)\n`,
        );
        if (report.differences.length) {
          for (const d of report.differences) {
            process.stdout.write(`  differs (${d.side}): ${d.cr_id ? `cr ${d.cr_id}` : `${d.table} ${d.id}`}\n`);
          }
          process.exitCode = 1;
        }
      },
    )
    .command('admin <action>', `administration: ${Object.values(ADMIN_ACTIONS).join(' | ')}`, (y) =>
      y
        .positional('action', { choices: Object.keys(ADMIN_ACTIONS) as Array<keyof typeof ADMIN_ACTIONS>, demandOption: true })
        .option('email', { type: 'string', describe: 'bootstrap, set-password: the user to create or reuse' })
        .option('name', { type: 'string', describe: 'bootstrap: display name (and account name) for a new user' })
        .option('password-stdin', { type: 'boolean', default: false, describe: 'read a dashboard password from standard input (never from an argument)' })
        .option('init', { type: 'boolean', default: false, describe: 'embedded database: create it when the data dir has none (otherwise refused, naming the dir)' }),
      async (args) => {
        const dbOpts = { createCluster: args.init };
        const [{ addKeyToFile, loadKeyring, secretBox }, { rotateSecrets }, { setPassword }, { bootstrapUser }] = await Promise.all([
          import('../infra/secret-box.js'),
          import('../services/secrets/rotate.js'),
          import('../services/dashboard/passwords.js'),
          import('../services/accounts/service.js'),
        ]);
        if (args.action === 'rotate-key') {
          // a new key first in the key file (or the first of SVC_SECRET_KEY), then every value resealed.
          const report = await withDatabase(async (d) => {
            const config = loadConfig();
            if (!config.SVC_SECRET_KEY) await addKeyToFile(config.dataDir);
            const box = secretBox(await loadKeyring({ envKey: config.SVC_SECRET_KEY, dataDir: config.dataDir }));
            return rotateSecrets(d.db, box);
          }, dbOpts);
          process.stdout.write(`key ${report.key_id}: resealed ${report.resealed}, already current ${report.already_current}, changed meanwhile ${report.skipped_concurrent}\n`);
          return;
        }
        if (!args.email) throw new Error(`admin ${args.action} needs --email`);
        const email = args.email;
        // Dashboard passwords come on stdin only: an argument would show in `ps` and shell history.
        const password = args.passwordStdin || args.action === 'set-password' ? await readPassword() : undefined;
        if (args.action === 'set-password') {
          const ok = await withDatabase((d) => setPassword(d.db, email, password!), dbOpts);
          if (!ok) throw new Error(`no user ${email}; create it with 'svc-server admin bootstrap --email ${email}'`);
          process.stderr.write(`password set for ${email.toLowerCase()}\n`);
          return;
        }
        const out = await withDatabase(async (d) => {
          const made = await bootstrapUser(d.db, { email, ...(args.name ? { name: args.name } : {}) });
          if (password !== undefined) await setPassword(d.db, email, password);
          return made;
        }, dbOpts);
        process.stdout.write(`${out.token.token}\n`);
      },
    )
    .demandCommand(1, `name a command: ${COMMANDS.join(', ')}`)
    .strict()
    .fail((msg, err) => {
      if (err) throw err;
      process.stderr.write(`error: ${msg}\n`);
      process.exit(2);
    })
    .help()
    .parseAsync();
}

main(hideBin(process.argv)).catch((err: unknown) => {
  if (err instanceof ConfigError) {
    process.stderr.write(`error: ${err.message}\n`);
    process.exit(2);
  }
  process.stderr.write(`error: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
