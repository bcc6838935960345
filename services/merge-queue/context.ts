import type { MergeQueueCommand, MergeQueueStateOrNull } from '../../domain/merge-queue/index.js';
import type { ProjectRecord } from '../../domain/project.js';
import type { ProjectRepo } from '../../infra/git/port.js';
import type { ChecksInForce } from '../checks/config.js';
import { CHECKS_ACTOR } from '../checks/schedule.js';
import type { QueueDeps } from './deps.js';
import { handleQueueCommand } from './handle.js';
import { nowOf } from '../../lib/clock.js';

/** What one step of one queue works with (services/merge-queue/step.ts). */
export type Ctx = { deps: QueueDeps; project: ProjectRecord; baseRef: string; repo: ProjectRepo; config: ChecksInForce; sweep: boolean };

export const nowIso = (deps: QueueDeps) => nowOf(deps).toISOString();
export const meta = (deps: QueueDeps) => ({ actor: CHECKS_ACTOR, now: nowOf(deps) });

/** A command on the queue's own stream, through the one write path. */
export const command = (cx: Ctx, c: (s: MergeQueueStateOrNull) => MergeQueueCommand | null) => handleQueueCommand(cx.deps, cx.project.project_id, cx.baseRef, c);
