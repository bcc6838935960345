import * as c from '../contracts/index.js';
import type { Op } from './openapi.js';

/** Review comments and "send to agent" (docs/api.md "Review"). */
export function reviewOps(): Record<string, Record<string, Op>> {
  const cr = '/v1/projects/{projectId}/change-requests/{crId}';
  return {
    [`${cr}/comments`]: {
      get: { summary: 'The CR’s review comments, oldest first (`as_of`: as the log held them then).', query: c.ListCommentsQuery, ok: { status: 200, schema: c.CommentList }, errors: [400, 401, 403, 404] },
      post: { summary: 'Comment: general, or on a line of the diff at commit_sha (default the head; path, line, side LEFT|RIGHT checked against the diff). Agent credentials: their own session’s CR only.', body: c.CreateCommentBody, ok: { status: 201, schema: c.OneComment }, errors: [400, 401, 403, 404, 503, 504] },
    },
    [`${cr}/comments/{commentId}`]: {
      patch: { summary: 'Resolve or unresolve a comment (people only: agent credentials 403).', body: c.ResolveCommentBody, ok: { status: 200, schema: c.OneComment }, errors: [400, 401, 403, 404, 409] },
    },
    [`${cr}/review`]: {
      get: { summary: 'Changes since the caller’s last review (their last comment’s head, or “mark reviewed”).', ok: { status: 200, schema: c.ReviewStateSchema }, errors: [401, 403, 404] },
    },
    [`${cr}/reviewed`]: {
      post: { summary: 'Mark the CR reviewed at its head now (people only).', body: c.EmptyBody, ok: { status: 200, schema: c.ReviewStateSchema }, errors: [400, 401, 403, 404, 409] },
    },
    [`${cr}/send-to-agent`]: {
      post: { summary: 'Send the unresolved comments (and other feedback) to the CR’s origin session as one prompt; restarts it if stopped. 409 origin_session_gone, head_not_session_branch, nothing_to_send; 429 over the session cap (people only).', body: c.EmptyBody, ok: { status: 202, schema: c.SentToAgentSchema }, errors: [400, 401, 403, 404, 409, 429, 503] },
    },
  };
}
