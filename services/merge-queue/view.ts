import type { MergeQueueJson } from '../../contracts/merge-queue.js';
import { runsOfResult, type CheckRun } from '../../domain/change-request/index.js';
import type { ProjectRecord } from '../../domain/project.js';
import { assertBranchName } from '../../domain/refs.js';
import type { Db } from '../../infra/db/db.js';
import { mergeQueueQueries as mq, type QueuedRow } from '../../sql/queries/merge-queue.js';
import { checksInForce } from '../checks/config.js';
import { readCrChecks } from '../checks/stream.js';
import { logPath } from '../checks/view.js';
import { loadQueue } from './handle.js';

const iso = (v: string | Date) => new Date(v).toISOString();
const RECENT = 20;

/**
 * `GET .../merge-queue?base=`: the queue of one base branch (the default branch unless
 * named): who waits in order, what each one's speculative merge result is and how its
 * checks stand, whether a landing is under way, and the latest CRs to leave it and why.
 */
export async function queueView(db: Db, project: ProjectRecord, base?: string): Promise<MergeQueueJson> {
  const baseRef = assertBranchName(base ?? project.default_branch, 'base');
  const config = await checksInForce(db, project.project_id);
  const q = await loadQueue(db, project.project_id, baseRef);
  const entries = (await db.rows<QueuedRow>(mq.entries(project.project_id, baseRef))).filter((e) => e.status === 'open' && e.base_ref === baseRef);
  const out: MergeQueueJson['entries'] = [];
  for (const [i, e] of entries.entries()) {
    const b = q?.built.find((x) => x.cr_id === e.cr_id && x.head_sha === e.head_sha);
    let runs: CheckRun[] = [];
    if (b) runs = runsOfResult((await readCrChecks({ db }, e.cr_id)).checks, b.base_sha, b.merge_sha);
    const landingAt = q?.landing ? q.built.findIndex((x) => x.cr_id === e.cr_id) : -1;
    const state: MergeQueueJson['entries'][number]['state'] = !b
      ? 'waiting'
      : landingAt >= 0 && landingAt < q!.landing!.count
        ? 'landing'
        : runs.some((r) => r.status === 'failed' || r.status === 'errored')
          ? 'failed'
          : config.checks.every((c) => runs.some((r) => r.name === c.name && r.status === 'passed'))
            ? 'passed'
            : 'checking';
    out.push({
      cr_id: e.cr_id,
      number: e.number,
      title: e.title,
      position: i + 1,
      head_sha: e.head_sha,
      queued_by: e.queued_by,
      queued_at: iso(e.queued_at),
      state,
      speculative_sha: b?.merge_sha ?? null,
      speculative_base_sha: b?.base_sha ?? null,
      runs: runs.map((r) => ({ run_id: r.run_id, name: r.name, status: r.status, log_url: logPath(project.project_id, e.number, r.run_id) })),
    });
  }
  const recent = (await db.rows<{ cr_id: string; number: number; title: string; type: string; data: Record<string, unknown>; recorded_at: Date }>(mq.recent(project.project_id, baseRef, RECENT))).map((r) => ({
    cr_id: r.cr_id,
    number: r.number,
    title: r.title,
    outcome: (r.type === 'ChangeRequestMerged' ? 'merged' : r.data.reason) as MergeQueueJson['recent'][number]['outcome'],
    context: typeof r.data.context === 'string' ? r.data.context : null,
    head_sha: String(r.type === 'ChangeRequestMerged' ? r.data.head_commit_sha : r.data.head_sha),
    at: iso(r.recorded_at),
  }));
  return {
    base_ref: baseRef,
    enabled: config.merge_queue.enabled,
    max_batch: config.merge_queue.max_batch,
    state: !config.merge_queue.enabled && !q?.built.length ? 'off' : q?.landing ? 'landing' : q?.built.length ? 'checking' : 'idle',
    base_sha: q?.base_sha ?? null,
    entries: out,
    recent,
    rebuilds: q?.rebuilds ?? 0,
    landed: q?.landed ?? 0,
  };
}
