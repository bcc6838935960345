import type { Argv } from 'yargs';
import type { Budget, SetBudgetBody } from '../../contracts/budgets.js';
import type { Args } from '../command-table.js';
import { hostContext, projectContext } from '../context.js';
import { UsageError } from '../errors.js';
import type { Factory } from '../factory.js';
import { str, withHost, withJson, withProject } from '../flags.js';
import { printJson } from '../output.js';

/**
 * `svc budget show | set <limit>|none [--unit tokens|money] [--per day|month] [--account]`:
 * the model budget a person sets on the linked (or --project) project, or with --account
 * on their account (docs/models.md "Budgets a person sets"). Past it, model calls, new
 * sessions and trigger fires are refused until it is raised or the period ends.
 */
export const builder = (y: Argv) =>
  withJson(
    withHost(
      withProject(
        y
          .positional('action', { type: 'string', choices: ['show', 'set'], describe: 'show or set' })
          .positional('limit', { type: 'string', describe: 'set: tokens, or money in the prices’ currency (--unit money); none removes the budget' })
          .option('unit', { type: 'string', choices: ['tokens', 'money'], requiresArg: true, describe: 'What the limit counts (set; default tokens)' })
          .option('per', { type: 'string', choices: ['day', 'month'], requiresArg: true, describe: 'The UTC period the limit is for (set; default month)' })
          .option('account', { type: 'boolean', describe: "Your account's budget (over all its projects) instead of the project's" }),
      ),
    ),
  );

export const handler = (argv: Args, f: Factory) =>
  run(f, {
    action: String(argv.action),
    limit: str(argv.limit),
    unit: str(argv.unit),
    per: str(argv.per),
    account: !!argv.account,
    project: str(argv.project),
    host: str(argv.host),
    json: !!argv.json,
  });

interface Opts {
  action: string;
  limit?: string | undefined;
  unit?: string | undefined;
  per?: string | undefined;
  account: boolean;
  project?: string | undefined;
  host?: string | undefined;
  json: boolean;
}

/** The body `set` sends: a whole number of tokens, a decimal amount of money, or none. */
export function bodyOf(o: Pick<Opts, 'limit' | 'unit' | 'per'>): SetBudgetBody {
  if (o.limit === undefined) throw new UsageError('missing argument <limit> for "svc budget set" (a number, or none)');
  if (o.limit === 'none') {
    if (o.unit !== undefined || o.per !== undefined) throw new UsageError('--unit and --per go with a limit, not none');
    return { limit: null };
  }
  const unit = (o.unit ?? 'tokens') as 'tokens' | 'money';
  const ok = unit === 'tokens' ? /^[1-9]\d{0,14}$/.test(o.limit) : /^\d{1,9}(\.\d{1,6})?$/.test(o.limit) && Number(o.limit) > 0;
  if (!ok) throw new UsageError(`invalid limit "${o.limit}": want ${unit === 'tokens' ? 'a whole number of tokens' : 'an amount such as 25 or 12.50'}, or none`);
  return { unit, period: (o.per ?? 'month') as 'day' | 'month', limit: Number(o.limit) };
}

const amount = (b: Budget, n: number) => (b.unit === 'money' ? `${n} ${b.currency ?? ''}`.trim() : `${n} tokens`);

export async function run(f: Factory, o: Opts): Promise<void> {
  if (o.action === 'show' && (o.limit !== undefined || o.unit !== undefined || o.per !== undefined)) throw new UsageError('"svc budget show" takes no limit, --unit or --per');
  const body = o.action === 'set' ? bodyOf(o) : null;
  const flags = { json: o.json, ...(o.host ? { host: o.host } : {}) };
  let path: string;
  let what: string;
  let api;
  if (o.account) {
    if (o.project) throw new UsageError('--account and --project name different budgets: give one');
    const ctx = await hostContext(f, flags);
    const me = await ctx.api.request<{ account: { account_id: string; name: string } | null }>('GET', '/accounts/me');
    if (!me.account) throw new UsageError('this user belongs to no account');
    path = `/accounts/${encodeURIComponent(me.account.account_id)}/budget`;
    what = `account ${me.account.name}`;
    api = ctx.api;
  } else {
    const ctx = await projectContext(f, { ...flags, ...(o.project ? { project: o.project } : {}) });
    path = `/projects/${encodeURIComponent(ctx.projectId)}/budget`;
    what = `project ${ctx.projectId}`;
    api = ctx.api;
  }
  const { budget } = body ? await api.request<{ budget: Budget | null }>('PUT', path, body) : await api.request<{ budget: Budget | null }>('GET', path);
  if (o.json) return printJson(f.io, budget);
  if (!budget) {
    f.io.err.write(body ? `Removed the budget of ${what}\n` : `No budget on ${what}. Set one with 'svc budget set <limit> --per day|month'.\n`);
    return;
  }
  const pct = budget.limit_in_force > 0 ? Math.floor((budget.spent / budget.limit_in_force) * 100) : 0;
  const capped = budget.limit_in_force < budget.limit ? ` (held to the operator's cap of ${amount(budget, budget.limit_in_force)})` : '';
  f.io.out.write(
    `${amount(budget, budget.limit)} per UTC ${budget.period}${capped}\n` +
      `spent ${amount(budget, budget.spent)} (${pct}%) since ${budget.period_start}${budget.reserved ? `, ${amount(budget, budget.reserved)} held by calls in flight` : ''}\n`,
  );
  if (body) f.io.err.write(`Set the budget of ${what}\n`);
}
