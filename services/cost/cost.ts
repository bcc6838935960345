import type { CrCost } from '../../contracts/cost.js';
import type { SessionUsage } from '../sessions/view.js';
import { foldChecks, parseChangeRequestEvent, type ChangeRequest, type ChecksState } from '../../domain/change-request/index.js';
import type { ProjectRecord } from '../../domain/project.js';
import type { Config } from '../../infra/config.js';
import type { Db } from '../../infra/db/db.js';
import { costQueries, type BranchCostRow, type OwnedUsage } from '../../sql/queries/cost.js';
import { findCr } from '../change-requests/service.js';
import { readCrChecks } from '../checks/stream.js';
import { chooseModel } from '../sessions/model-choice.js';
import { nowOf } from '../../lib/clock.js';

/**
 * What a session and a change request cost (docs/models.md "Cost"): the gateway's usage
 * rows at the prices they kept, sandbox running time and check time, attributed to CRs by
 * one read of the log and the usage table (sql/queries/cost.ts), so nothing is rewritten.
 */
export interface CostDeps {
  db: Db;
  config: Config;
  now?: () => Date;
}

/** A session's branch is its id: only such a branch has model calls and sandboxes. */
const SESSION_BRANCH = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;


async function branchCost(deps: CostDeps, projectId: string, branch: string): Promise<BranchCostRow | null> {
  if (!SESSION_BRANCH.test(branch)) return null;
  return (await deps.db.one<BranchCostRow>(costQueries.branch(projectId, branch, nowOf(deps)))) ?? null;
}

/** Its agent's model is a provider's own (a project key): those calls never reach the gateway. */
function unmeteredOf(config: Config, row: BranchCostRow | null): boolean {
  return !!row?.session && chooseModel(config, row.session_model, row.manifest_model ?? undefined).via === 'provider';
}

/** Money summed per currency, in currency order; amounts rounded to 1e-9 (sums of numeric read as float). */
function moneyOf(rows: OwnedUsage[]): { currency: string; amount: number }[] {
  const by = new Map<string, number>();
  for (const r of rows) if (r.currency !== null) by.set(r.currency, (by.get(r.currency) ?? 0) + Number(r.cost ?? 0));
  return [...by.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([currency, amount]) => ({ currency, amount: Math.round(amount * 1e9) / 1e9 }));
}

function spentOf(rows: OwnedUsage[]) {
  const sum = (pick: (r: OwnedUsage) => number) => rows.reduce((n, r) => n + pick(r), 0);
  return {
    input_tokens: sum((r) => Number(r.input_tokens)),
    output_tokens: sum((r) => Number(r.output_tokens)),
    requests: sum((r) => Number(r.requests)),
    money: moneyOf(rows),
    unpriced_tokens: sum((r) => (r.currency === null ? Number(r.input_tokens) + Number(r.output_tokens) : 0)),
  };
}

function byModel(rows: OwnedUsage[]) {
  const models = [...new Set(rows.map((r) => r.model))].sort();
  return models.map((model) => {
    const own = rows.filter((r) => r.model === model);
    return { model, ...spentOf(own), priced: own.every((r) => r.currency !== null) };
  });
}

const seconds = (n: number) => Math.round(n * 1000) / 1000;

/** The session JSON's `usage`: tokens, money, sandbox time, and the split across its branch's CRs. */
export async function sessionCostUsage(deps: CostDeps, projectId: string, sessionId: string): Promise<SessionUsage> {
  const row = await branchCost(deps, projectId, sessionId);
  const usage = row?.usage ?? [];
  const sandbox = row?.sandbox ?? [];
  const owners = new Map<string | null, number | null>();
  for (const r of [...usage, ...sandbox]) owners.set(r.cr_id, r.number);
  const shares = [...owners.entries()]
    .sort(([, a], [, b]) => (a ?? Infinity) - (b ?? Infinity))
    .map(([cr_id, number]) => ({
      cr_id,
      number,
      ...spentOf(usage.filter((u) => u.cr_id === cr_id)),
      sandbox_seconds: seconds(sandbox.filter((s) => s.cr_id === cr_id).reduce((n, s) => n + Number(s.seconds), 0)),
    }));
  return {
    ...spentOf(usage),
    by_model: byModel(usage),
    sandbox_seconds: seconds(sandbox.reduce((n, s) => n + Number(s.seconds), 0)),
    cpu_seconds: row?.cpu_seconds == null ? null : seconds(Number(row.cpu_seconds)),
    unmetered: unmeteredOf(deps.config, row),
    by_change_request: shares,
  };
}

/** `GET …/change-requests/:crId/cost`. */
export async function crCost(deps: CostDeps, project: ProjectRecord, ref: string): Promise<CrCost> {
  const found = await findCr(deps.db, project.project_id, ref);
  const { cr, checks } = await readCrChecks(deps, found.cr_id);
  return costOfCr(deps, project, cr, checks);
}

/** The same from the CR's events already read (the dashboard's CR page reads them for its history). */
export function crCostFrom(deps: CostDeps, project: ProjectRecord, cr: ChangeRequest, events: { type: string; data: unknown }[]): Promise<CrCost> {
  return costOfCr(deps, project, cr, foldChecks(events.map(parseChangeRequestEvent)));
}

async function costOfCr(deps: CostDeps, project: ProjectRecord, cr: ChangeRequest, checks: ChecksState): Promise<CrCost> {
  const row = await branchCost(deps, project.project_id, cr.head_ref);
  const usage = (row?.usage ?? []).filter((r) => r.cr_id === cr.cr_id);
  const sandbox = (row?.sandbox ?? []).filter((r) => r.cr_id === cr.cr_id);
  const now = nowOf(deps).getTime();
  const runs = checks.runs
    .filter((r) => r.started_at !== null)
    .map((r) => ({
      run_id: r.run_id,
      name: r.name,
      seconds: seconds(Math.max(0, ((r.finished_at ? Date.parse(r.finished_at) : now) - Date.parse(r.started_at!)) / 1000)),
      running: r.finished_at === null,
    }));
  return {
    cr_id: cr.cr_id,
    number: cr.number,
    session_id: row?.session ? cr.head_ref : null,
    ...spentOf(usage),
    by_model: byModel(usage),
    sandbox_seconds: seconds(sandbox.reduce((n, s) => n + Number(s.seconds), 0)),
    cpu_seconds: null,
    check_seconds: seconds(runs.reduce((n, r) => n + r.seconds, 0)),
    check_runs: runs,
    unmetered: unmeteredOf(deps.config, row),
  };
}
