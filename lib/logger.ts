import { pino, type Logger, type LoggerOptions } from 'pino';

export type { Logger };

/**
 * Paths pino must never print. Tokens, passwords and credentials are replaced before
 * serialisation, wherever in a logged object they appear at these depths.
 */
export const redactPaths = [
  'token',
  'password',
  'secret',
  'authorization',
  'credential',
  '*.token',
  '*.password',
  '*.secret',
  '*.authorization',
  '*.credential',
  'req.headers.authorization',
  'req.headers.cookie',
  'req.headers["x-svc-user-context"]',
  'headers.authorization',
  'headers["x-svc-user-context"]',
  'env.SVC_TOKEN',
  'env.SVC_CLI_TOKEN',
  'env.SVC_EXECUTOR_TOKEN',
  'env.SVC_LLM_API_KEY',
  // Project secret values: request bodies of the secrets API, sandbox env maps.
  'value',
  '*.value',
  'req.body',
  'body.set',
  'body.value',
  'secrets.env',
];

export interface LoggerSettings {
  level?: string;
  name?: string;
  /** Pretty output for a person at a terminal; JSON otherwise. */
  pretty?: boolean;
  destination?: NodeJS.WritableStream;
}

export function createLogger(settings: LoggerSettings = {}): Logger {
  const options: LoggerOptions = {
    level: settings.level ?? process.env.LOG_LEVEL ?? 'info',
    redact: { paths: redactPaths, censor: '[redacted]' },
    ...(settings.name ? { name: settings.name } : {}),
  };
  const pretty = settings.pretty ?? (process.stdout.isTTY === true && !process.env.CI);
  if (pretty && !settings.destination) {
    return pino({ ...options, transport: { target: 'pino-pretty', options: { colorize: true } } });
  }
  return settings.destination ? pino(options, settings.destination as pino.DestinationStream) : pino(options);
}

/** A logger that drops everything: for tests and for library code given no logger. */
export const silentLogger: Logger = pino({ level: 'silent' });
