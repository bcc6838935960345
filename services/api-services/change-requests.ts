import type { ServiceWiring } from './index.js';
import * as crs from '../change-requests/service.js';
import { requestMerge, type MergeRequest } from '../change-requests/request-merge.js';
import { crStack, findCrWithFamily, patchCr } from '../change-requests/stack.js';
import { mergeStack } from '../change-requests/merge-stack.js';
import { crCost, crCostFrom } from '../cost/cost.js';
import type { ProjectRecord } from '../../domain/project.js';
import { loadedCrOf } from '../projects/access.js';
import { listComments, postComment, setResolved } from '../review/comments.js';
import { getReviewState, markReviewed, reviewPageOf } from '../review/reviewed.js';
import { DEFAULT_MAX_AGENT_ROUNDS, sendToAgent, type ReviewDeps } from '../review/send-to-agent.js';
import { checkFeedback } from '../checks/feedback.js';
import { dequeueByPerson, mergeWhenGreen } from '../merge-queue/enqueue.js';
import { queueView } from '../merge-queue/view.js';
import { MQ_STEP, type QueueDeps } from '../merge-queue/deps.js';
import { deleteCheckLog, readCheckLog } from '../checks/log-store.js';
import { checksInForce } from '../checks/config.js';
import { CHECK_EVALUATE, CHECK_RUN, type ChecksDeps } from '../checks/deps.js';
import { postStatus } from '../checks/statuses.js';
import { checksViewFrom, crChecksView } from '../checks/view.js';
import { getManifest, type ManifestDeps } from '../manifest/sync.js';
import { bind } from './bind.js';

/** The change-request service's dependencies, from the server's configuration (SVC_DIFF_*, timeouts). */
export function crDepsOf(w: ServiceWiring): crs.CrDeps {
  const c = w.config;
  return {
    db: w.db,
    commands: w.crCommands,
    repos: w.repos,
    logger: w.logger,
    refreshTimeoutMs: c.SVC_REFRESH_TIMEOUT_MS,
    diffTimeoutMs: c.SVC_DIFF_TIMEOUT_MS,
    lockWaitMs: c.SVC_MERGE_LOCK_WAIT_MS,
    diffLimits: {
      maxFileBytes: c.SVC_DIFF_MAX_FILE_BYTES,
      maxFileLines: c.SVC_DIFF_MAX_FILE_LINES,
      maxTotalBytes: c.SVC_DIFF_MAX_TOTAL_BYTES,
      maxTotalLines: c.SVC_DIFF_MAX_TOTAL_LINES,
      maxFiles: c.SVC_DIFF_MAX_FILES,
    },
  };
}

/** Change requests: the CR routes, compare, and the dashboard's CR and project pages. */
export function changeRequestServices(w: ServiceWiring, crDeps: crs.CrDeps) {
  return {
    list: bind(crDeps, crs.listCrPage),
    open: bind(crDeps, crs.openCr),
    get: bind(crDeps, crs.getCr),
    /** The CR row `requireAuth` read with the token, when it is this project's. */
    loaded: loadedCrOf,
    find: bind(w.db, crs.findCr),
    /** An edit, a person's retarget included (stack parents decided again). */
    edit: bind(crDeps, patchCr),
    /** The CR with its stack's parent and children, in the one read of the CR. */
    findWithFamily: bind(crDeps, findCrWithFamily),
    stack: bind(crDeps, crStack),
    /** What a CR cost (its model calls, sandbox time and checks). */
    cost: bind({ db: w.db, config: w.config }, crCost),
    /** The same, from the history a CR page already read. */
    costFrom: bind({ db: w.db, config: w.config }, crCostFrom),
    diff: bind(crDeps, crs.diffCr),
    preview: bind(crDeps, crs.previewCr),
    history: bind(crDeps, crs.crHistory),
    historyOf: bind(crDeps, crs.historyOfCr),
    diffOf: bind(crDeps, crs.diffOfCr),
    previewOf: bind(crDeps, crs.previewOfCr),
    close: bind(crDeps, crs.closeCr),
    reopen: bind(crDeps, crs.reopenCr),
    compare: bind(crDeps, crs.compareBranches),
    /** A person's merge; `onConflict` is told when the merge found a conflict (the merge metrics). */
    merge: (project: ProjectRecord, ref: string, actor: string, body: MergeRequest & { stack?: boolean | undefined }, onConflict: () => void) => {
      const { stack, ...one } = body;
      // `stack`: this CR and every one below it, bottom-up, each through the one merge path.
      return (stack ? mergeStack : requestMerge)({ ...crDeps, queue: w.queue, onConflict }, project, ref, actor, one);
    },
  };
}

/** The review service's dependencies: the CR's, the sessions (send to agent), the checks' feedback, the manifest's round limit. */
function reviewDepsOf(w: ServiceWiring, crDeps: crs.CrDeps, manifestDeps: ManifestDeps): ReviewDeps {
  return {
    ...crDeps,
    sessions: w.sessions,
    // Failing checks on the current head go with the comments (services/checks/feedback.ts).
    feedbackSources: [checkFeedback],
    async maxAgentRounds(project: ProjectRecord) {
      const view = await getManifest(manifestDeps, project).catch(() => null);
      const n = (view?.manifest as { review?: { max_agent_rounds?: unknown } } | null | undefined)?.review?.max_agent_rounds;
      return typeof n === 'number' && Number.isInteger(n) && n >= 0 ? n : DEFAULT_MAX_AGENT_ROUNDS;
    },
  };
}

/** Review: comments, the reviewed mark, send to agent (the review routes and the CR page). */
export function reviewServices(w: ServiceWiring, crDeps: crs.CrDeps, manifestDeps: ManifestDeps) {
  const rd = reviewDepsOf(w, crDeps, manifestDeps);
  return {
    comments: bind(rd, listComments),
    comment: bind(rd, postComment),
    resolve: bind(rd, setResolved),
    state: bind(rd, getReviewState),
    markReviewed: bind(rd, markReviewed),
    page: bind(rd, reviewPageOf),
    sendToAgent: bind(rd, sendToAgent),
  };
}

/** The checks service from the API's side: runs and merge-when-green evaluations go to the workers. */
function checksDepsOf(w: ServiceWiring, crDeps: crs.CrDeps): ChecksDeps {
  const queue = w.queue;
  return {
    ...crDeps,
    box: w.secrets,
    dataDir: w.config.dataDir,
    enqueueRun: async (job) => void (await queue.enqueue(CHECK_RUN, job, { retryLimit: 0 })),
    evaluateLater: async (project_id, cr_id) => void (await queue.enqueue(CHECK_EVALUATE, { project_id, cr_id })),
  };
}

/** Checks: a CR's runs and statuses, run logs, outside statuses, merge-when-green. */
export function checkServices(w: ServiceWiring, crDeps: crs.CrDeps) {
  const cd = checksDepsOf(w, crDeps);
  return {
    view: bind(cd, crChecksView),
    /** The checks as a CR page already read its events (no second read of the stream). */
    viewFrom: bind(cd, checksViewFrom),
    readLog: bind(w.db, readCheckLog),
    deleteLog: bind(w.db, deleteCheckLog),
    postStatus: bind(cd, postStatus),
    inForce: bind(w.db, checksInForce),
    /** Merge when green: into the base branch's merge queue when it is on, else the CR's own auto-merge. */
    mergeWhenGreen: bind(queueDepsOf(w, cd), mergeWhenGreen),
  };
}

/** The merge queue's service from the API's side: its steps go to the workers. */
function queueDepsOf(w: ServiceWiring, cd: ChecksDeps): QueueDeps {
  return { ...cd, enqueueStep: async (job) => void (await w.queue.enqueue(MQ_STEP, job)) };
}

/** The merge queue: a base branch's queue as people see it; a person takes a CR out of it. */
export function mergeQueueServices(w: ServiceWiring, crDeps: crs.CrDeps) {
  return {
    view: bind(w.db, queueView),
    dequeue: bind(queueDepsOf(w, checksDepsOf(w, crDeps)), dequeueByPerson),
  };
}
