import { html, type Html } from './html.js';

/**
 * Charts as server-rendered SVG: presentation attributes only (the dashboard's CSP allows
 * no inline style and no script), a viewBox that scales to the column it sits in, a title
 * and description for screen readers, and every bar's number written beside it (also as
 * `data-value`, what the browser specs read).
 */
export interface Bar {
  label: string;
  value: number;
  /** The value as a person reads it (the same formatter as the tables and the CLI). */
  text: string;
}

const W = 360;
const ACCENT = '#0969da';
const AXIS = '#d1d9e0';
const INK = '#1b1f24';
const MUTED = '#59636e';

const frame = (id: string, title: string, desc: string, h: number, body: Html) =>
  html`<figure class="chart" id="${id}"><figcaption id="${id}-title">${title}</figcaption>
<svg viewBox="0 0 ${W} ${h}" width="100%" role="img" aria-labelledby="${id}-title ${id}-desc" preserveAspectRatio="xMidYMin meet" font-family="system-ui, sans-serif"><desc id="${id}-desc">${desc}</desc>${body}</svg></figure>`;

const empty = (id: string, title: string) => html`<figure class="chart" id="${id}"><figcaption>${title}</figcaption><p class="muted">Nothing in this window.</p></figure>`;

/** Columns over time (one per week), each labelled with its value. */
export function columnChart(o: { id: string; title: string; bars: Bar[]; color?: string }): Html {
  if (o.bars.length === 0) return empty(o.id, o.title);
  const h = 190;
  const top = 22;
  const base = h - 34;
  const left = 8;
  const slot = (W - left * 2) / o.bars.length;
  const max = Math.max(...o.bars.map((b) => b.value), 0) || 1;
  const every = Math.ceil(o.bars.length / 8); // at most 8 date labels
  const cols = o.bars.map((b, i) => {
    const bh = ((base - top) * b.value) / max;
    // A few weeks do not make a few wall-wide columns.
    const w = Math.min(slot * 0.7, 56);
    const x = left + i * slot + (slot - w) / 2;
    return html`<g data-label="${b.label}" data-value="${b.value}"><title>${b.label}: ${b.text}</title>
<rect x="${x.toFixed(1)}" y="${(base - bh).toFixed(1)}" width="${w.toFixed(1)}" height="${Math.max(bh, 0).toFixed(1)}" fill="${o.color ?? ACCENT}" rx="2"></rect>
<text x="${(x + w / 2).toFixed(1)}" y="${(base - bh - 5).toFixed(1)}" text-anchor="middle" font-size="11" fill="${INK}">${b.text}</text>
${i % every === 0 ? html`<text x="${(x + w / 2).toFixed(1)}" y="${base + 16}" text-anchor="middle" font-size="10" fill="${MUTED}">${b.label.slice(5)}</text>` : ''}</g>`;
  });
  return frame(o.id, o.title, o.bars.map((b) => `${b.label}: ${b.text}`).join('; '), h, html`<line x1="${left}" y1="${base}" x2="${W - left}" y2="${base}" stroke="${AXIS}" stroke-width="1"></line>${cols}`);
}

/** Horizontal bars, one per group, each labelled with its value; `max` fixes the scale (1 for rates). */
export function barChart(o: { id: string; title: string; bars: Bar[]; max?: number; color?: string }): Html {
  if (o.bars.length === 0) return empty(o.id, o.title);
  const row = 30;
  const h = o.bars.length * row + 8;
  const labelW = 96;
  const valueW = 96;
  const span = W - labelW - valueW;
  const max = o.max ?? (Math.max(...o.bars.map((b) => b.value), 0) || 1);
  const rows = o.bars.map((b, i) => {
    const y = 4 + i * row;
    const bw = (span * Math.min(b.value, max)) / max;
    const label = b.label.length > 14 ? `${b.label.slice(0, 13)}…` : b.label;
    return html`<g data-label="${b.label}" data-value="${b.value}"><title>${b.label}: ${b.text}</title>
<text x="${labelW - 6}" y="${y + 18}" text-anchor="end" font-size="12" fill="${INK}">${label}</text>
<rect x="${labelW}" y="${y + 5}" width="${span}" height="18" fill="#f6f8fa" rx="2"></rect>
<rect x="${labelW}" y="${y + 5}" width="${bw.toFixed(1)}" height="18" fill="${o.color ?? ACCENT}" rx="2"></rect>
<text x="${labelW + span + 6}" y="${y + 18}" font-size="12" fill="${INK}">${b.text}</text></g>`;
  });
  return frame(o.id, o.title, o.bars.map((b) => `${b.label}: ${b.text}`).join('; '), h, html`${rows}`);
}
