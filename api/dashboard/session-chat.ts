import type { ChangeRequest } from '../../domain/change-request/index.js';
import type { SessionUsage, SessionView } from '../../services/sessions/view.js';
import { html, type Html } from './html.js';
import { statusBadge } from './shared.js';
import { moneyText, secondsText } from '../../lib/cost-text.js';

/**
 * The server-rendered parts of a session page's conversation: the agent's readiness above
 * the chat (swapped live), the change requests the session's agent opened, and the model
 * usage. The conversation itself is read by app.js through the session proxy and rendered
 * by `chat-render.ts`.
 */

/** "Starting" until the agent answers (`agent_state`), or why it will not. */
export function chatState(s: Pick<SessionView, 'status' | 'agent_state' | 'error'>): Html {
  const state = s.status !== 'running' && s.agent_state === 'starting' && (s.status === 'stopped' || s.status === 'failed' || s.status === 'completed') ? 'stopped' : s.agent_state;
  const text =
    state === 'ready' ? ''
    : state === 'starting' ? 'The agent is starting…'
    : state === 'error' ? `The agent failed to start${s.error ? `: ${s.error.message}` : '.'}`
    : 'The agent is stopped.';
  return html`<div data-live="chat-state" data-agent-state="${state}">${text ? html`<p class="${state === 'error' ? 'notice error' : 'muted'}" role="status">${text}</p>` : ''}</div>`;
}

/** Every change request the session's agent opened (`origin_session_id`), or one from its branch. */
export function sessionCrs(projectPath: string, crs: ChangeRequest[]): Html {
  return html`<section data-live="session-crs"><h2>Change requests</h2>${crs.length
    ? html`<ul class="crs">${crs.map((c) => html`<li>${statusBadge(c.status)} <a href="${projectPath}/change-requests/${c.number}">#${c.number} ${c.title}</a></li>`)}</ul>`
    : html`<p class="muted">None yet.</p>`}</section>`;
}

const n = (v: number) => v.toLocaleString('en-US');

/**
 * Tokens the model reported through the gateway, what they cost and the sandbox's running
 * time, for a `<dl class="facts">`: the totals, then per model (unpriced ones flagged) and
 * per change request of the session's branch.
 */
export function usageFacts(u: SessionUsage | undefined): Html {
  const unmetered = u?.unmetered ? html`<dt>Model calls</dt><dd data-unmetered>unmetered <span class="muted">(the agent uses its own provider's key: its calls bypass the gateway and are not counted)</span></dd>` : '';
  const time = u ? html`<dt>Sandbox time</dt><dd data-sandbox-seconds="${u.sandbox_seconds}">${secondsText(u.sandbox_seconds)}${u.cpu_seconds !== null ? html` <span class="muted">(${secondsText(u.cpu_seconds)} CPU)</span>` : ''}</dd>` : '';
  if (!u || u.requests === 0) return html`<dt>Tokens</dt><dd class="muted">none used yet</dd>${unmetered}${time}`;
  const models = u.by_model.map((m, i) => html`${i ? ', ' : ''}${m.model} ${n(m.input_tokens)} / ${n(m.output_tokens)}${m.priced ? '' : html` <span class="unpriced" data-unpriced="${m.model}">unpriced</span>`}`);
  const shares = u.by_change_request.filter((c) => c.requests > 0 || c.sandbox_seconds > 0);
  return html`<dt>Tokens</dt><dd data-usage>${n(u.input_tokens)} input · ${n(u.output_tokens)} output <span class="muted">(${n(u.requests)} model call${u.requests === 1 ? '' : 's'}${u.by_model.length ? html`: ${models}` : ''})</span></dd>
<dt>Cost</dt><dd data-money>${moneyText(u.money)}${u.unpriced_tokens ? html` <span class="muted">+ ${n(u.unpriced_tokens)} unpriced tokens</span>` : ''}</dd>${unmetered}${time}
${shares.length ? html`<dt>By change request</dt><dd data-cost-shares>${shares.map((c, i) => html`${i ? html`<br>` : ''}${c.number === null ? 'unattributed' : `#${c.number}`}: ${n(c.input_tokens + c.output_tokens)} tokens · ${moneyText(c.money)} · ${secondsText(c.sandbox_seconds)}`)}</dd>` : ''}`;
}
