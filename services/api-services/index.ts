/**
 * The services the API receives (`ApiDeps.services`), built once by the wiring
 * (ops/wiring/http.ts) from the database, the secret box, the repositories and the
 * configuration. Routes and dashboard pages call these functions; they never see the
 * database or the whole configuration, so a route cannot hold SQL or a workflow
 * (test/unit/house/api-surface.unit.spec.ts).
 *
 * A new route group: add a group here (one property per concept, each function with its
 * dependencies bound, the caller's arguments left), then call `deps.services.<group>.<fn>`.
 */
import type { Config } from '../../infra/config.js';
import type { Db } from '../../infra/db/db.js';
import type { Logger } from '../../lib/logger.js';
import type { Queue } from '../../infra/queue.js';
import type { SecretBox } from '../../infra/secret-box.js';
import type { ProjectRepos } from '../../infra/git/project-repos.js';
import type { CrCommandPath } from '../change-requests/command-path.js';
import type { SessionDeps } from '../sessions/deps.js';
import type { SpawnSession } from '../triggers/service.js';
import { authServices } from './auth.js';
import { gitHosting } from '../git-hosting/smart-http.js';
import { changeRequestServices, checkServices, crDepsOf, mergeQueueServices, reviewServices } from './change-requests.js';
import { appServices, budgetServices, channelServices, manifestDepsOf, manifestServices, projectServices, triggerServices } from './projects.js';
import { previewServices, sandboxServices, sessionServices } from './sessions.js';
import { dashboardServices } from './dashboard.js';
import { feedReads, healthServices } from './server.js';
import { llmServices } from './llm.js';
import { insightServices } from './insights.js';

/** What the wiring builds the API's services from (one per process). */
export interface ServiceWiring {
  config: Config;
  db: Db;
  logger: Logger;
  secrets: SecretBox;
  repos: ProjectRepos;
  /** The CR command path's group commit and caches. */
  crCommands: CrCommandPath;
  /** Merges, provisioning, manifest syncs and app deploys are jobs on it. */
  queue: Queue;
  /** Sessions: absent in a process that runs none (the routes answer 503). */
  sessions?: SessionDeps | undefined;
  /** Spawns a session; absent: a trigger fire records 'sessions unavailable'. */
  spawnSession?: SpawnSession | undefined;
  /** Told after a project's secrets change (push to running sandboxes). */
  onSecretsChanged?: ((projectId: string, change: { set: string[]; unset: string[]; revision: number }) => void) | undefined;
}

export function apiServices(w: ServiceWiring) {
  const crDeps = crDepsOf(w);
  const manifestDeps = manifestDepsOf(w);
  return {
    auth: authServices(w),
    gitHosting: gitHosting(w),
    projects: projectServices(w),
    manifest: manifestServices(w, manifestDeps),
    triggers: triggerServices(w),
    channels: channelServices(w),
    budgets: budgetServices(w),
    apps: appServices(w),
    changeRequests: changeRequestServices(w, crDeps),
    review: reviewServices(w, crDeps, manifestDeps),
    checks: checkServices(w, crDeps),
    mergeQueue: mergeQueueServices(w, crDeps),
    /** Absent where this process runs no sessions (the routes answer 503). */
    sessions: w.sessions ? sessionServices(w.sessions) : undefined,
    sandboxes: sandboxServices(w),
    previews: previewServices(w),
    dashboard: dashboardServices(w),
    feed: feedReads(w.db),
    health: healthServices(w),
    llm: llmServices(w),
    insights: insightServices(w),
  };
}

export type ApiServices = ReturnType<typeof apiServices>;
