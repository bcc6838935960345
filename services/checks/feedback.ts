import { latestRuns } from '../../domain/change-request/index.js';
import { checkQueries } from '../../sql/queries/checks.js';
import type { FeedbackSource } from '../review/feedback.js';
import { readCrChecks } from './stream.js';

/** Lines of a failing check's log the agent gets (the end, where the failure is). */
export const FAILURE_LOG_LINES = 40;

/**
 * The checks' contribution to "Send to agent" (services/review/feedback.ts's seam): each
 * check whose latest run on the CR's current head failed or errored, with its exit and the
 * end of its log (stored bounded and with known secret values masked, as the log route
 * serves it). A run on an older head is not fed back: the agent has moved on from it.
 */
export const checkFeedback: FeedbackSource = async ({ db, project, cr }) => {
  const { checks } = await readCrChecks({ db }, cr.cr_id);
  const failing = latestRuns(checks).filter((r) => (r.status === 'failed' || r.status === 'errored') && r.head_sha === cr.head_commit_sha);
  const items = [];
  for (const r of failing) {
    const log = await db.one<{ body: string }>(checkQueries.getLog(project.project_id, cr.cr_id, r.run_id));
    const tail = (log?.body ?? '').replace(/\s+$/, '').split('\n').slice(-FAILURE_LOG_LINES).join('\n');
    const what = r.status === 'failed' ? `failed${r.exit_code !== null ? ` (exit ${r.exit_code})` : ''}` : `errored${r.reason ? ` (${r.reason})` : ''}`;
    items.push({
      kind: 'check',
      ref: r.name,
      text: [
        `Check \`${r.name}\` ${what} on the merge of your head ${r.head_sha.slice(0, 7)} into the base ${r.base_sha.slice(0, 7)}.`,
        tail ? `The end of its log:\n\`\`\`\n${tail.replace(/```/g, "'''")}\n\`\`\`` : 'Its log is empty.',
      ].join('\n'),
    });
  }
  return items;
};
