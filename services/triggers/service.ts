import { randomBytes } from 'node:crypto';
import type { Trigger } from '../../contracts/manifest.js';
import type { Db } from '../../infra/db/db.js';
import type { Logger } from '../../lib/logger.js';
import type { ProjectRepos } from '../../infra/git/project-repos.js';
import type { ProjectRecord } from '../../domain/project.js';
import { DomainError, notFound } from '../../domain/errors.js';
import { isBudgetRefusal } from '../../domain/budget/budget.js';
import { setTriggerEnabled } from '../../domain/manifest/edit.js';
import { MANIFEST_PATH } from '../../domain/manifest/parse.js';
import { SLUG } from '../../domain/manifest/schema.js';
import { manifestQueries } from '../../sql/queries/manifest.js';
import { triggerQueries, type TriggerRow } from '../../sql/queries/triggers.js';
import { appendLog } from '../manifest/audit-log.js';
import { openCr } from '../change-requests/service.js';
import type { ChangeRequest } from '../../domain/change-request/index.js';
import { nowOf } from '../../lib/clock.js';

/** Decision 4 of the plan: the sessions capability, when present, spawns sessions for us. */
export interface SpawnSessionInput {
  project: ProjectRecord;
  userId: string;
  agent?: string;
  model?: string;
  prompt?: string;
  trigger?: string;
}
export type SpawnSession = (input: SpawnSessionInput) => Promise<{ session_id: string } & Record<string, unknown>>;

export interface TriggerDeps {
  db: Db;
  repos: ProjectRepos;
  logger: Logger;
  spawnSession?: SpawnSession;
  now?: () => Date;
}

export const SESSIONS_UNAVAILABLE = 'sessions unavailable';

export function serializeTrigger(t: TriggerRow): Trigger {
  const iso = (d: Date | null) => (d ? new Date(d).toISOString() : null);
  return {
    slug: t.slug,
    schedule: t.schedule,
    prompt: t.prompt,
    agent: t.agent,
    model: t.model,
    enabled: t.enabled,
    last_fired_at: iso(t.last_fired_at),
    next_fire_at: iso(t.next_fire_at),
  };
}

/** The project's triggers, by slug. */
export async function listTriggers(db: Db, projectId: string): Promise<TriggerRow[]> {
  return db.rows<TriggerRow>(triggerQueries.list(projectId));
}

export interface TriggerFire {
  tick: Date;
  kind: string;
  outcome: string;
  session_id: string | null;
  fired_at: Date;
}

/** The trigger's latest `limit` fires. */
export async function triggerFires(db: Db, projectId: string, slug: string, limit: number): Promise<TriggerFire[]> {
  return db.rows<TriggerFire>(triggerQueries.fires(projectId, slug, limit));
}

export async function getTrigger(db: Db, projectId: string, slug: string): Promise<TriggerRow> {
  if (!SLUG.test(slug)) throw notFound('Trigger');
  const t = await db.one<TriggerRow>(triggerQueries.get(projectId, slug));
  if (!t) throw notFound('Trigger');
  return t;
}

export type FireOutcome =
  | { outcome: 'spawned'; session: Record<string, unknown> }
  | { outcome: 'sessions unavailable' | 'failed'; error: string }
  /** A budget a person set is spent: the refusal (429) is recorded once per period by the budget, not per fire. */
  | { outcome: 'budget exceeded'; error: string; refusal: DomainError };

/**
 * Spawns the trigger's session (the spawn is the sessions capability's; it injects
 * SVC_INITIAL_PROMPT and SVC_BOOTSTRAP_AGENT_SESSION=1 as for any session created with a
 * prompt) and records the fire's outcome. Without that capability, the fire is recorded
 * with outcome 'sessions unavailable'.
 */
async function spawnFor(deps: TriggerDeps, project: ProjectRecord, t: TriggerRow, userId: string): Promise<FireOutcome> {
  if (!deps.spawnSession) return { outcome: SESSIONS_UNAVAILABLE, error: 'This server has no sessions capability to spawn a session with.' };
  try {
    const session = await deps.spawnSession({
      project,
      userId,
      prompt: t.prompt,
      trigger: t.slug,
      ...(t.agent ? { agent: t.agent } : {}),
      ...(t.model ? { model: t.model } : {}),
    });
    return { outcome: 'spawned', session };
  } catch (err) {
    if (isBudgetRefusal(err)) return { outcome: 'budget exceeded', error: err.message, refusal: err };
    return { outcome: 'failed', error: err instanceof Error ? err.message : String(err) };
  }
}

async function recordOutcome(deps: TriggerDeps, project: ProjectRecord, t: TriggerRow, tick: Date, kind: 'schedule' | 'manual', out: FireOutcome, actor: string) {
  const sessionId = out.outcome === 'spawned' ? String(out.session.session_id) : null;
  await deps.db.transaction(async (tx) => {
    await tx.run(triggerQueries.settle(project.project_id, t.slug, tick, kind, out.outcome, sessionId));
    // Past its budget, a trigger ticking every minute would log every tick: its refusal is
    // the budget's BudgetRefused event, once per period; the fire's row still says why.
    if (out.outcome === 'budget exceeded') return;
    await appendLog(tx, 'triggers', project.project_id, [
      { type: 'TriggerFired', data: { slug: t.slug, kind, tick: tick.toISOString(), outcome: out.outcome, session_id: sessionId, ...(out.outcome !== 'spawned' ? { error: out.error } : {}) } },
    ], actor);
  });
}

/** `POST .../triggers/:slug/fire`: a manual fire, whatever `enabled` says. */
export async function fireTrigger(deps: TriggerDeps, project: ProjectRecord, slug: string, actor: string): Promise<FireOutcome> {
  const t = await getTrigger(deps.db, project.project_id, slug);
  const at = nowOf(deps);
  await deps.db.run(triggerQueries.claim(project.project_id, t.slug, at, 'manual'));
  await deps.db.run(triggerQueries.firedManually(project.project_id, t.slug, at));
  const out = await spawnFor(deps, project, t, actor);
  await recordOutcome(deps, project, t, at, 'manual', out, actor);
  deps.logger.info({ project_id: project.project_id, trigger: t.slug, outcome: out.outcome }, 'trigger fired manually');
  return out;
}

/** Scheduled fire of one claimed tick; the spawning user is the account's owner. */
export async function fireScheduled(deps: TriggerDeps, project: ProjectRecord, t: TriggerRow, tick: Date): Promise<FireOutcome> {
  const owner = await deps.db.one<{ user_id: string }>(manifestQueries.accountOwner(project.account_id));
  const out = owner
    ? await spawnFor(deps, project, t, owner.user_id)
    : ({ outcome: 'failed', error: 'the account has no member to act as' } as const);
  await recordOutcome(deps, project, t, tick, 'schedule', out, 'scheduler');
  return out;
}

/**
 * `enable`/`disable`: nothing but a merge moves the default branch, so the server commits
 * the one-line change of `enabled` in svc.toml on a new branch and opens a CR for it. The
 * scheduler follows when that CR merges.
 */
export async function proposeEnabled(
  deps: TriggerDeps,
  project: ProjectRecord,
  slug: string,
  enabled: boolean,
  actor: string,
): Promise<ChangeRequest> {
  await getTrigger(deps.db, project.project_id, slug);
  const repo = deps.repos.for(project);
  const base = project.default_branch;
  const tip = (await repo.readTips([base]))[base] ?? null;
  if (!tip) throw notFound(`Branch '${base}'`);
  const file = await repo.readFileAt(tip, MANIFEST_PATH);
  if (!file) throw new DomainError('conflict', 'Conflict', `${MANIFEST_PATH} is not on ${base} any more.`);
  const edit = setTriggerEnabled(file.toString('utf8'), slug, enabled);
  if (!edit.ok) throw new DomainError('conflict', 'Conflict', `${edit.reason}.`);
  if (!edit.changed) throw new DomainError('conflict', 'Conflict', `Trigger '${slug}' is already ${enabled ? 'enabled' : 'disabled'} on ${base}.`);
  const verb = enabled ? 'enable' : 'disable';
  const branch = `svc/triggers/${verb}-${slug}-${randomBytes(3).toString('hex')}`;
  const title = `${enabled ? 'Enable' : 'Disable'} trigger ${slug}`;
  await repo.commitFileOnNewBranch({
    branch,
    fromSha: tip,
    path: MANIFEST_PATH,
    content: edit.text,
    message: `${title}\n\nSet enabled = ${enabled} for [[triggers]] '${slug}' in ${MANIFEST_PATH}.\n`,
    author: { name: 'svc', email: 'noreply@svc.local' },
  });
  return openCr({ db: deps.db, repos: deps.repos, logger: deps.logger }, project, actor, {
    title,
    description: `Sets \`enabled = ${enabled}\` for the trigger \`${slug}\` in \`${MANIFEST_PATH}\`. The scheduler follows once this merges.`,
    head_ref: branch,
    base_ref: base,
    metadata: { trigger: slug, enabled },
  });
}
