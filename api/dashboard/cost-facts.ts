import type { CrCost } from '../../contracts/cost.js';
import { moneyText, secondsText } from '../../lib/cost-text.js';
import { html, type Html } from './html.js';

const n = (v: number) => v.toLocaleString('en-US');

/**
 * A change request's cost on its page (docs/models.md "Cost"): the model calls of its
 * session that belong to it, what they cost (unpriced models flagged), its share of the
 * sandbox's time and its checks' time; "unmetered" when its agent bypasses the gateway.
 */
export function costLine(c: CrCost): Html {
  if (!c.session_id && c.check_seconds === 0) return html``;
  const unpriced = c.by_model.filter((m) => !m.priced).map((m) => m.model);
  const parts: Html[] = [];
  if (c.session_id) {
    parts.push(html`${n(c.input_tokens)} input · ${n(c.output_tokens)} output tokens (${n(c.requests)} model call${c.requests === 1 ? '' : 's'})`);
    parts.push(html`<span data-money>${moneyText(c.money)}</span>${c.unpriced_tokens ? html` + ${n(c.unpriced_tokens)} unpriced tokens (<span data-unpriced>${unpriced.join(', ')}</span>)` : ''}`);
    parts.push(html`sandbox <span data-sandbox-seconds="${c.sandbox_seconds}">${secondsText(c.sandbox_seconds)}</span>`);
    if (c.unmetered) parts.push(html`<span data-unmetered>unmetered</span>: the agent uses its own provider's key, its calls bypass the gateway`);
  }
  parts.push(html`checks <span data-check-seconds="${c.check_seconds}">${secondsText(c.check_seconds)}</span>`);
  return html`<p class="muted" data-cost>Cost: ${parts.map((p, i) => html`${i ? ' · ' : ''}${p}`)}</p>`;
}
