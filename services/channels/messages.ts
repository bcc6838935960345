import type { Executor } from '../../infra/db/db.js';
import type { StoredEvent } from '../../infra/event-store.js';
import { channelQueries as q } from '../../sql/queries/channels.js';

/** The events a channel hears about. Everything else only moves its checkpoint. */
export const CHANNEL_EVENT_TYPES = new Set([
  'ChangeRequestOpened',
  'ChangeRequestMerged',
  'ChangeRequestClosed',
  'SessionRunning',
  'SessionFailed',
  'BudgetThresholdCrossed',
]);

export interface ChannelMessage {
  text: string;
}

const crIdOf = (streamId: string) => streamId.replace(/^cr-/, '');
const sessionIdOf = (e: StoredEvent) =>
  ((e.data as { session_id?: string })?.session_id ?? e.stream_id.replace(/^session-/, '')) as string;

/** Slack's incoming-webhook payload (`text` with `<url|label>` links) for one event. */
export async function formatEvent(db: Executor, e: StoredEvent, publicUrl: string | undefined): Promise<ChannelMessage | null> {
  if (!CHANNEL_EVENT_TYPES.has(e.type) || !e.project_id) return null;
  const project = await db.one<{ slug: string; name: string }>(q.projectSlug(e.project_id));
  const where = project?.slug ?? e.project_id;
  const base = publicUrl?.replace(/\/+$/, '');
  const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
  if (e.type.startsWith('ChangeRequest')) {
    const data = e.data as { number?: number; title?: string; base_ref?: string; head_ref?: string };
    const cr = data.number ? data : await db.one<{ number: number; title: string; base_ref: string; head_ref: string }>(q.crByStream(crIdOf(e.stream_id)));
    if (!cr) return null;
    const label = `CR #${cr.number}`;
    const link = base ? `<${base}/projects/${e.project_id}/change-requests/${cr.number}|${label}>` : label;
    const title = esc(cr.title ?? '');
    if (e.type === 'ChangeRequestOpened') return { text: `${link} opened in ${esc(where)}: ${title} (${esc(cr.head_ref ?? '')} → ${esc(cr.base_ref ?? '')})` };
    if (e.type === 'ChangeRequestMerged') return { text: `${link} merged into ${esc(cr.base_ref ?? '')} in ${esc(where)}: ${title}` };
    return { text: `${link} closed in ${esc(where)}: ${title}` };
  }
  if (e.type === 'BudgetThresholdCrossed') return budgetNotice(e.data as BudgetCrossing, esc);
  const id = sessionIdOf(e);
  const label = `Session ${id}`;
  const link = base ? `<${base}/projects/${e.project_id}/sessions/${id}|${label}>` : label;
  if (e.type === 'SessionRunning') return { text: `${link} is running in ${esc(where)}` };
  const err = (e.data as { error?: { message?: string } | string })?.error;
  const why = typeof err === 'string' ? err : err?.message;
  return { text: `${link} failed in ${esc(where)}${why ? `: ${esc(why)}` : ''}` };
}

interface BudgetCrossing {
  scope: 'project' | 'account';
  name?: string;
  threshold: number;
  unit: 'tokens' | 'money';
  period: 'day' | 'month';
  limit: number;
  spent: number;
  currency: string | null;
}

/** A budget a person set passed 80% (one notice) or 100% (work stops until it is raised or the period ends). */
function budgetNotice(d: BudgetCrossing, esc: (s: string) => string): ChannelMessage {
  const amount = (n: number) => (d.unit === 'money' ? `${n} ${d.currency ?? ''}`.trim() : `${n} tokens`);
  const whose = `The ${d.scope} ${esc(d.name ?? '')}`.trim();
  const budget = `${amount(d.limit)} per UTC ${d.period}`;
  if (d.threshold >= 100) {
    return { text: `${whose} has spent its model budget (${budget}): model calls, new sessions and trigger fires are refused until a person raises it (svc budget set) or the ${d.period} ends.` };
  }
  return { text: `${whose} has used ${d.threshold}% of its model budget: ${amount(d.spent)} of ${budget}.` };
}
