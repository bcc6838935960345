/**
 * HTML with everything escaped by default: `html\`<p>${value}</p>\`` escapes every
 * interpolation unless it is already `Html` (built by this same tag). Arrays are joined.
 * There is no other way to put text into a page, so nothing reaches one unescaped.
 */
export class Html {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value;
  }
}

const ESC: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;', '`': '&#96;' };
export const escapeHtml = (s: string): string => s.replace(/[&<>"'`]/g, (c) => ESC[c]!);

type Part = Html | string | number | boolean | null | undefined | Part[];

function render(p: Part): string {
  if (p === null || p === undefined || p === false) return '';
  if (p instanceof Html) return p.value;
  if (Array.isArray(p)) return p.map(render).join('');
  return escapeHtml(String(p));
}

export function html(strings: TemplateStringsArray, ...parts: Part[]): Html {
  let out = strings[0]!;
  for (let i = 0; i < parts.length; i++) out += render(parts[i]!) + strings[i + 1]!;
  return new Html(out);
}

/** Trusted markup from this codebase (never user data). */
export const raw = (s: string) => new Html(s);

export const shortSha = (s: string | null | undefined) => (s ? s.slice(0, 7) : '–');

export function timeAgo(iso: string | null | undefined, now = Date.now()): Html {
  if (!iso) return html`–`;
  const s = Math.round((now - new Date(iso).getTime()) / 1000);
  const text =
    s < 60 ? 'just now' : s < 3600 ? `${Math.floor(s / 60)} min ago` : s < 86400 ? `${Math.floor(s / 3600)} h ago` : `${Math.floor(s / 86400)} d ago`;
  return html`<time datetime="${iso}" title="${iso}">${text}</time>`;
}
