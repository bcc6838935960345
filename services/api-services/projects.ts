import type { ServiceWiring } from './index.js';
import type { ProjectRecord } from '../../domain/project.js';
import { reposDirOf } from '../../infra/git/managed-repo.js';
import { relayDirOf } from '../../infra/git/relay.js';
import { outboundPolicy } from '../../infra/net/outbound-policy.js';
import { projectForCaller } from '../projects/access.js';
import { deleteProject, listProjectsForUser, projectById, projectsById } from '../projects/service.js';
import { openProject } from '../projects/open.js';
import { accountsOfUser } from '../accounts/service.js';
import { listTokens, mintToken, revokeToken } from '../tokens/service.js';
import { getManifest, type ManifestDeps } from '../manifest/sync.js';
import { changeSecrets, deleteSecret, listSecrets, putSecret, type SecretsDeps, type SecretsListing } from '../secrets/service.js';
import { fireTrigger, getTrigger, listTriggers, proposeEnabled, triggerFires, type TriggerDeps } from '../triggers/service.js';
import { addChannel, listChannels, removeChannel } from '../channels/service.js';
import { appDeploys, appOfLabel, getAppWithDeploys, listApps } from '../apps/service.js';
import { APP_DEPLOY } from '../apps/sync.js';
import { bind } from './bind.js';
import { accountForCaller, getBudget, setBudget } from '../budgets/service.js';

/** Projects, accounts and tokens: who may see which project, creation and deletion, the caller's tokens. */
export function projectServices(w: ServiceWiring) {
  return {
    /** The one access rule (services/projects/access.ts): the project `ref` names, as `caller` may see it. */
    forCaller: bind(w.db, projectForCaller),
    byId: bind(w.db, projectById),
    /** A project token's one project, as a list. */
    byIdList: bind(w.db, projectsById),
    listForUser: bind(w.db, listProjectsForUser),
    open: bind({ db: w.db, secrets: w.secrets, config: w.config }, openProject),
    remove: bind({ db: w.db, reposDir: reposDirOf(w.config), relayDir: relayDirOf(w.config), logger: w.logger }, deleteProject),
    accountsOf: bind(w.db, accountsOfUser),
    mintToken: bind(w.db, mintToken),
    listTokens: bind(w.db, listTokens),
    revokeToken: bind(w.db, revokeToken),
  };
}

export function manifestDepsOf(w: ServiceWiring): ManifestDeps {
  const queue = w.queue;
  return { db: w.db, repos: w.repos, logger: w.logger, enqueueApp: async (job) => void (await queue.enqueue(APP_DEPLOY, job)) };
}

/** The manifest in force and the project's secrets (values go in, never out). */
export function manifestServices(w: ServiceWiring, manifestDeps: ManifestDeps) {
  const secretsDeps: SecretsDeps = { db: w.db, box: w.secrets, ...(w.onSecretsChanged ? { onChange: w.onSecretsChanged } : {}) };
  return {
    get: bind(manifestDeps, getManifest),
    /** A project's secret names with the manifest's `[env]` spec (the route and the dashboard's secrets page). */
    async secrets(project: ProjectRecord): Promise<SecretsListing> {
      // The [env] spec comes from the manifest: read it once for a project never synced.
      await getManifest(manifestDeps, project).catch((err: Error) => w.logger.debug({ err: err.message }, 'manifest unavailable for the secrets listing'));
      return listSecrets(w.db, project.project_id);
    },
    /** The listing without reading the manifest (after a change: the page had it). */
    secretNames: bind(w.db, listSecrets),
    putSecret: bind(secretsDeps, putSecret),
    deleteSecret: bind(secretsDeps, deleteSecret),
    changeSecrets: bind(secretsDeps, changeSecrets),
  };
}

/** Triggers: the manifest's, their fires, firing now, enabling through a CR. */
export function triggerServices(w: ServiceWiring) {
  const triggerDeps: TriggerDeps = { db: w.db, repos: w.repos, logger: w.logger, ...(w.spawnSession ? { spawnSession: w.spawnSession } : {}) };
  return {
    list: bind(w.db, listTriggers),
    get: bind(w.db, getTrigger),
    fires: bind(w.db, triggerFires),
    fire: bind(triggerDeps, fireTrigger),
    proposeEnabled: bind(triggerDeps, proposeEnabled),
  };
}

/** Chat channels: webhooks checked against the outbound policy (SVC_CHANNELS_ALLOW_HTTP). */
export function channelServices(w: ServiceWiring) {
  const channelDeps = { db: w.db, secrets: w.secrets, allowHttp: w.config.SVC_CHANNELS_ALLOW_HTTP, policy: outboundPolicy(w.config) };
  return {
    list: bind(w.db, listChannels),
    add: bind(channelDeps, addChannel),
    remove: bind(w.db, removeChannel),
  };
}

/** Apps as the manifest declares them, with their deploys; an app's own origin's label. */
export function appServices(w: ServiceWiring) {
  return {
    list: bind(w.db, listApps),
    get: bind(w.db, getAppWithDeploys),
    deploys: bind(w.db, appDeploys),
    ofLabel: bind(w.db, appOfLabel),
  };
}

/** Budgets a person sets, per project and per account (docs/models.md "Budgets a person sets"). */
export function budgetServices(w: ServiceWiring) {
  const d = { db: w.db, config: w.config };
  return {
    get: bind(d, getBudget),
    set: bind(d, setBudget),
    /** The account the caller may set a budget on (a member's), else not found. */
    accountFor: bind(w.db, accountForCaller),
  };
}
