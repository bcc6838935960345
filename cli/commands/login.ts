import type { Argv } from 'yargs';
import type { Args } from '../command-table.js';
import { readConfig, updateConfig } from '../config.js';
import { dashboardUrl, apiFor } from '../context.js';
import { CliError, UsageError } from '../errors.js';
import type { Factory } from '../factory.js';
import { str } from '../flags.js';
import { BUILTIN_HOSTS, activeHostName, hostExists, hostView, normalizeUrl } from '../hosts.js';
import { readAll } from '../prompt.js';

export interface LoginOptions {
  f: Factory;
  host?: string;
  api?: string;
  /** A token, or `-` for stdin; absent: browser flow. */
  token?: string;
  /** How long the browser flow waits for the callback. */
  timeoutMs?: number;
}

export const builder = (y: Argv) =>
  y
    .option('token', { type: 'string', requiresArg: true, describe: 'Log in with this token instead of the browser (- reads stdin)' })
    .option('host', { type: 'string', requiresArg: true, describe: 'Host to log in to (default: the active host)' })
    .option('api', { type: 'string', requiresArg: true, describe: 'API URL of the host (creates or updates it)' });

export const handler = (argv: Args, f: Factory) => run({ f, host: str(argv.host), api: str(argv.api), token: str(argv.token) });

export async function run(opts: LoginOptions): Promise<void> {
  const { f } = opts;
  const config = await readConfig(f.configPath);
  let name = opts.host;
  let url: string;
  if (opts.api) {
    url = normalizeUrl(opts.api);
    name ??= new URL(url).host;
  } else {
    name ??= activeHostName(config);
    if (!hostExists(config, name)) throw new CliError(`unknown host "${name}"`, `add it with 'svc hosts add ${name} --url <url>' or pass --api`);
    url = hostView(config, name).url;
  }

  let token: string;
  if (opts.token === '-') {
    token = (await readAll(f.io.in)).trim();
    if (!token) throw new UsageError('no token on standard input');
  } else if (opts.token !== undefined) {
    token = opts.token.trim();
    if (!token) throw new UsageError('--token is empty');
  } else {
    token = await browserFlow(f, name, url, opts.timeoutMs ?? 5 * 60_000);
  }

  // Only a token the server accepts is stored.
  const me = await apiFor(f, url, token).me();
  const hostName = name;
  await updateConfig(f.configPath, (c) => {
    const entry = { ...c.hosts[hostName], token, user: me.user.email };
    if (opts.api && (!(hostName in BUILTIN_HOSTS) || url !== BUILTIN_HOSTS[hostName])) entry.url = url;
    c.hosts[hostName] = entry;
    c.active_host = hostName;
  });
  f.io.err.write(`Logged in to ${hostName} (${url}) as ${me.user.name ? `${me.user.name} <${me.user.email}>` : me.user.email}\n`);
}

/**
 * The dashboard's approval redirects the browser to a one-shot server on 127.0.0.1 with
 * `?code=...&state=...`; the code is redeemed for a user token (POST /v1/cli/login/token),
 * so no token exists until this process holds it.
 */
async function browserFlow(f: Factory, hostName: string, apiUrl: string, timeoutMs: number): Promise<string> {
  const [{ createServer }, { randomBytes }, os] = await Promise.all([import('node:http'), import('node:crypto'), import('node:os')]);
  const state = randomBytes(16).toString('hex');
  let done!: (code: string) => void;
  let denied!: () => void;
  const received = new Promise<string>((resolve, reject) => {
    done = resolve;
    denied = () => reject(new CliError('the login was denied in the browser'));
  });
  const server = createServer((req, res) => {
    const u = new URL(req.url ?? '/', 'http://127.0.0.1');
    const code = u.searchParams.get('code');
    if (u.pathname === '/callback' && u.searchParams.get('state') === state && u.searchParams.get('error') === 'access_denied') {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', connection: 'close' });
      res.end('<!doctype html><title>svc</title><p>Login denied. You can close this window.</p>\n');
      denied();
      return;
    }
    if (u.pathname !== '/callback' || u.searchParams.get('state') !== state || !code) {
      res.writeHead(400, { 'content-type': 'text/plain' }).end('Invalid login callback.\n');
      return;
    }
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', connection: 'close' });
    res.end('<!doctype html><title>svc</title><p>Logged in. You can close this window and return to the terminal.</p>\n');
    done(code);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as { port: number }).port;
  const callback = `http://127.0.0.1:${port}/callback`;
  const url = `${dashboardUrl(f, apiUrl)}/cli/login?${new URLSearchParams({ callback, state, host: hostName, hostname: os.hostname() })}`;
  f.io.err.write(`To log in, open this URL in your browser:\n  ${url}\nWaiting for the browser...\n`);
  if (f.io.stdinIsTTY && f.io.stdoutIsTTY && !f.env.CI) {
    await f.openBrowser(url).catch(() => f.io.err.write('(could not open a browser; open the URL yourself)\n'));
  }
  let timer: NodeJS.Timeout | undefined;
  try {
    const code = await Promise.race([
      received,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new CliError('timed out waiting for the browser login', "try again, or use 'svc login --token'")), timeoutMs);
      }),
    ]);
    return (await apiFor(f, apiUrl, undefined).request<{ token: string }>('POST', '/cli/login/token', { state, code })).token;
  } finally {
    clearTimeout(timer);
    server.closeAllConnections?.();
    server.close();
  }
}
