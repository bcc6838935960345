import type { Argv } from 'yargs';
import type { MintedToken, Token } from '../../../contracts/accounts.js';
import type { Args } from '../../command-table.js';
import { hostContext } from '../../context.js';
import { UsageError } from '../../errors.js';
import type { Factory } from '../../factory.js';
import { str, withHost, withJson } from '../../flags.js';
import { colors, formatTime, printJson, printTable } from '../../output.js';

/**
 * `svc auth token ls | create [--name N] [--expires-in-days D] | revoke <token-id>`: your
 * tokens, in gh's shape. `create` prints only the token on stdout (shown once); the
 * rest goes to stderr, so `TOKEN=$(svc auth token create)` works.
 */
export type TokenRow = Token;

export const builder = (y: Argv) =>
  withJson(
    withHost(
      y
        .positional('action', { type: 'string', choices: ['ls', 'list', 'create', 'revoke'], describe: 'ls, create or revoke' })
        .positional('token', { type: 'string', describe: 'Token id (revoke)' })
        .option('name', { type: 'string', requiresArg: true, describe: 'Name of the new token (create)' })
        .option('expires-in-days', { type: 'number', requiresArg: true, describe: 'Days until the new token stops working (create; default: never)' }),
    ),
  );

export const handler = (argv: Args, f: Factory) =>
  run(f, {
    action: String(argv.action),
    token: str(argv.token),
    name: str(argv.name),
    expiresInDays: argv.expiresInDays === undefined ? undefined : Number(argv.expiresInDays),
    host: str(argv.host),
    json: !!argv.json,
  });

export async function run(f: Factory, o: { action: string; token?: string; name?: string; expiresInDays?: number; host?: string; json: boolean }): Promise<void> {
  if (o.action !== 'revoke' && o.token) throw new UsageError(`unexpected argument "${o.token}" for "svc auth token ${o.action}"`);
  if (o.action !== 'create' && (o.name !== undefined || o.expiresInDays !== undefined)) throw new UsageError('--name and --expires-in-days go with create');
  const ctx = await hostContext(f, { json: o.json || o.action === 'create', ...(o.host ? { host: o.host } : {}) });
  if (o.action === 'ls' || o.action === 'list') {
    const { tokens } = await ctx.api.request<{ tokens: TokenRow[] }>('GET', '/accounts/tokens');
    if (o.json) return printJson(f.io, tokens);
    const c = colors(f.io, f.env);
    const tty = f.io.stdoutIsTTY;
    printTable(
      f.io,
      ['id', 'name', 'kind', 'created', 'last used', 'expires'],
      tokens.map((t) => [
        t.token_id,
        t.name || (tty ? c.dim('(unnamed)') : ''),
        t.project_id ? `project ${t.project_id}` : 'user',
        formatTime(f.io, t.created_at, f.now()),
        t.last_used_at ? formatTime(f.io, t.last_used_at, f.now()) : tty ? 'never' : '',
        t.expires_at ?? (tty ? 'never' : ''),
      ]),
      c,
    );
    return;
  }
  if (o.action === 'create') {
    if (o.expiresInDays !== undefined && (!Number.isInteger(o.expiresInDays) || o.expiresInDays < 1 || o.expiresInDays > 3650)) {
      throw new UsageError('--expires-in-days must be a whole number from 1 to 3650');
    }
    const minted = await ctx.api.request<MintedToken>('POST', '/accounts/tokens', {
      ...(o.name !== undefined ? { name: o.name } : {}),
      ...(o.expiresInDays !== undefined ? { expires_in_days: o.expiresInDays } : {}),
    });
    if (o.json) return printJson(f.io, minted);
    f.io.err.write(`Created token ${minted.token_id}${minted.expires_at ? ` (expires ${minted.expires_at})` : ''}. It is shown only once:\n`);
    f.io.out.write(`${minted.token}\n`);
    return;
  }
  if (!o.token) throw new UsageError('missing argument <token> for "svc auth token revoke"');
  await ctx.api.request('DELETE', `/accounts/tokens/${encodeURIComponent(o.token)}`);
  f.io.err.write(`Revoked token ${o.token}\n`);
}
