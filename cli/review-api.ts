/**
 * Review comments and "send to agent" (docs/api.md "Review"), over the CLI's ApiClient.
 * Shared by `svc cr comment|comments|resolve|reviewed|send-to-agent` and `svc cr show`.
 */
import type { ApiClient } from './api-client.js';
import type { Comment, CreateCommentInput, ReviewState, SentToAgent } from '../contracts/review.js';

export type { Comment, ReviewState, SentToAgent };

const enc = encodeURIComponent;
const crBase = (project: string, cr: string | number) => `/projects/${enc(project)}/change-requests/${enc(String(cr))}`;

export const reviewApi = (api: ApiClient) => ({
  comments: async (project: string, cr: string | number) => (await api.request<{ comments: Comment[] }>('GET', `${crBase(project, cr)}/comments`)).comments,
  comment: async (project: string, cr: string | number, input: CreateCommentInput) =>
    (await api.request<{ comment: Comment }>('POST', `${crBase(project, cr)}/comments`, input)).comment,
  resolve: async (project: string, cr: string | number, commentId: string, resolved: boolean) =>
    (await api.request<{ comment: Comment }>('PATCH', `${crBase(project, cr)}/comments/${enc(commentId)}`, { resolved })).comment,
  review: async (project: string, cr: string | number) => (await api.request<ReviewState>('GET', `${crBase(project, cr)}/review`)).review,
  markReviewed: async (project: string, cr: string | number) => (await api.request<ReviewState>('POST', `${crBase(project, cr)}/reviewed`, {})).review,
  sendToAgent: (project: string, cr: string | number) => api.request<SentToAgent>('POST', `${crBase(project, cr)}/send-to-agent`, {}),
});
