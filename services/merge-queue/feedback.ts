import { crQueries } from '../../sql/queries/change-requests.js';
import type { FeedbackSource } from '../review/feedback.js';
import { readCrChecks } from '../checks/stream.js';

/**
 * The merge queue's contribution to a round sent to the agent: the CR left the queue
 * because its head does not merge onto what landed ahead of it. Sent only once those CRs
 * landed (services/merge-queue/step.ts holds it until then), so a pull brings exactly what
 * it conflicts with; the item names them.
 */
export const queueConflictFeedback: FeedbackSource = async ({ db, project, cr }) => {
  const { checks } = await readCrChecks({ db }, cr.cr_id);
  const q = checks.queue;
  if (q?.status !== 'left' || q.reason !== 'conflict' || q.head_sha !== cr.head_commit_sha) return [];
  const ahead = q.ahead.length ? await db.rows<{ cr_id: string; number: number; status: string }>(crQueries.numbersOf(project.project_id, q.ahead)) : [];
  const landed = ahead.filter((a) => a.status === 'merged').map((a) => `#${a.number}`);
  const files = q.context ? ` (${q.context})` : '';
  return [
    {
      kind: 'conflict',
      ref: q.head_sha,
      text: [
        `The merge queue could not merge your head ${q.head_sha.slice(0, 7)} into \`${cr.base_ref}\`: it conflicts${files}`,
        landed.length ? `with change requests ${landed.join(', ')}, which have landed on \`${cr.base_ref}\` since.` : `with \`${cr.base_ref}\` as it is now.`,
        `Pull \`${cr.base_ref}\` into your branch, resolve the conflict, commit and push; then it can be queued again.`,
      ].join(' '),
    },
  ];
};
