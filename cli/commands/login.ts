import type { Argv } from 'yargs';
import type { Args } from '../command-table.js';
import { readConfig, updateConfig } from '../config.js';
import { dashboardUrl, apiFor } from '../context.js';
import { ApiError, CliError, UsageError, describeError } from '../errors.js';
import type { Factory } from '../factory.js';
import { str } from '../flags.js';
import { BUILTIN_HOSTS, activeHostName, hostExists, hostView, normalizeUrl } from '../hosts.js';
import { readAll } from '../prompt.js';
import type { Me } from '../api-client.js';

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
  const hostName = name;
  const previous = config.hosts[hostName]?.token;

  /** Only a token the server accepts is stored. */
  const store = async (token: string): Promise<Me> => {
    const me = await apiFor(f, url, token)
      .me()
      .catch((e: unknown) => {
        if (e instanceof ApiError && e.status === 401) throw new CliError(`the token was refused by ${hostName} (${url}): it is unknown, revoked or expired (HTTP 401)`);
        throw e;
      });
    await updateConfig(f.configPath, (c) => {
      const entry = { ...c.hosts[hostName], token, user: me.user.email };
      if (opts.api && (!(hostName in BUILTIN_HOSTS) || url !== BUILTIN_HOSTS[hostName])) entry.url = url;
      c.hosts[hostName] = entry;
      c.active_host = hostName;
    });
    return me;
  };

  let token: string;
  let me: Me;
  if (opts.token === undefined) {
    ({ token, me } = await browserFlow(f, hostName, url, opts.timeoutMs ?? 5 * 60_000, async (t) => ({ token: t, me: await store(t) })));
  } else {
    if (opts.token === '-') {
      token = (await readAll(f.io.in)).trim();
      if (!token) throw new UsageError('no token on standard input');
    } else {
      token = opts.token.trim();
      if (!token) throw new UsageError('--token is empty');
    }
    me = await store(token);
  }
  f.io.err.write(`Logged in to ${hostName} (${url}) as ${me.user.name ? `${me.user.name} <${me.user.email}>` : me.user.email}\n`);
  if (previous && previous !== token) await revokePrevious(f, hostName, url, previous);
}

/**
 * The token a new login replaced is revoked with itself (its id from `GET /v1/accounts/me`,
 * then `DELETE /v1/accounts/tokens/:id`). Best effort: the new login stands either way; a
 * token the server no longer accepts is already dead.
 */
async function revokePrevious(f: Factory, hostName: string, url: string, old: string): Promise<void> {
  const api = apiFor(f, url, old);
  try {
    const { token_id } = await api.me();
    if (typeof token_id !== 'string') throw new Error('the server does not say which token it is');
    await api.request('DELETE', `/accounts/tokens/${encodeURIComponent(token_id)}`);
  } catch (e) {
    if (e instanceof ApiError && e.status === 401) return;
    f.io.err.write(`warning: the previous token for ${hostName} was not revoked (${describeError(e)}); revoke it on the dashboard's tokens page\n`);
  }
}

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
const page = (res: import('node:http').ServerResponse, status: number, text: string) => {
  res.writeHead(status, { 'content-type': 'text/html; charset=utf-8', connection: 'close' });
  res.end(`<!doctype html><title>svc</title><p>${text}</p>\n`);
};

/**
 * Bound to this terminal (gh's device flow, plus PKCE): the login is registered with the
 * server first (`POST /v1/cli/login`: this process's loopback callback and the sha256 of
 * a verifier only it holds), and the server's short user code is printed beside the link;
 * the approval page asks for that code. The approval redirects the browser to the one-shot
 * server on 127.0.0.1 with `?code=...&state=...`; the code is redeemed with the verifier
 * (POST /v1/cli/login/token), so no token exists until this process holds it, and a code
 * seen by anyone else is worthless. `complete` checks and stores the token; only then does
 * the browser hear that the login worked (otherwise it hears that it failed).
 */
async function browserFlow<T>(f: Factory, hostName: string, apiUrl: string, timeoutMs: number, complete: (token: string) => Promise<T>): Promise<T> {
  const [{ createServer }, { createHash, randomBytes }, os] = await Promise.all([import('node:http'), import('node:crypto'), import('node:os')]);
  const verifier = randomBytes(32).toString('base64url');
  const challenge = createHash('sha256').update(verifier).digest('base64url');
  let state = '';
  let finish!: (r: Promise<T>) => void;
  const finished = new Promise<T>((resolve) => (finish = resolve));
  let taken = false;
  const server = createServer((req, res) => {
    const u = new URL(req.url ?? '/', 'http://127.0.0.1');
    const code = u.searchParams.get('code');
    if (taken || !state || u.pathname !== '/callback' || u.searchParams.get('state') !== state) {
      res.writeHead(400, { 'content-type': 'text/plain' }).end('Invalid login callback.\n');
      return;
    }
    if (u.searchParams.get('error') === 'access_denied') {
      taken = true;
      page(res, 200, 'Login denied. You can close this window.');
      finish(Promise.reject(new CliError('the login was denied in the browser')));
      return;
    }
    if (!code) {
      res.writeHead(400, { 'content-type': 'text/plain' }).end('Invalid login callback.\n');
      return;
    }
    taken = true;
    const result = apiFor(f, apiUrl, undefined)
      .request<{ token: string }>('POST', '/cli/login/token', { state, code, code_verifier: verifier })
      .then((r) => complete(r.token));
    result.then(
      () => page(res, 200, 'Logged in. You can close this window and return to the terminal.'),
      (e: unknown) => page(res, 500, `Login failed: ${escapeHtml(describeError(e))}. Run <code>svc login</code> again.`),
    );
    finish(result.catch((e: unknown) => Promise.reject(new CliError(`the login failed: ${describeError(e)}`, "run 'svc login' again"))));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as { port: number }).port;
  const callback = `http://127.0.0.1:${port}/callback`;
  let userCode: string;
  try {
    ({ state, user_code: userCode } = await apiFor(f, apiUrl, undefined).request<{ state: string; user_code: string }>('POST', '/cli/login', {
      callback,
      hostname: os.hostname(),
      code_challenge: challenge,
      code_challenge_method: 'S256',
    }));
  } catch (e) {
    server.close();
    throw new CliError(`could not start the login: ${describeError(e)}`, "try again, or use 'svc login --token'");
  }
  const url = `${dashboardUrl(f, apiUrl)}/cli/login?${new URLSearchParams({ state })}`;
  f.io.err.write(`First copy your one-time code: ${userCode}\nThen open this URL in your browser and enter it there:\n  ${url}\nWaiting for the browser...\n`);
  if (f.io.stdinIsTTY && f.io.stdoutIsTTY && !f.env.CI) {
    await f.openBrowser(url).catch(() => f.io.err.write('(could not open a browser; open the URL yourself)\n'));
  }
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      finished,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          if (!taken) reject(new CliError('timed out waiting for the browser login', "try again, or use 'svc login --token'"));
        }, timeoutMs);
      }),
    ]);
  } finally {
    clearTimeout(timer);
    // The browser's page is written before this settles; close() lets it flush, then a
    // connection the browser keeps open (a preconnect) is cut after a second.
    await new Promise<void>((resolve) => {
      const cut = setTimeout(() => server.closeAllConnections(), 1000);
      server.close(() => (clearTimeout(cut), resolve()));
    });
  }
}
