/**
 * The session page's conversation renderer: the agent runtime's history (opencode's
 * `GET /session/:id/message`, `[{info, parts}]`) to HTML, with a small safe markdown subset
 * (paragraphs, fenced code, inline code, emphasis, headings, lists, quotes, links).
 *
 * It runs in the browser (app.js embeds `chatRenderer.toString()`, so it must stay one
 * self-contained function with no imports or outer references) and in unit tests here.
 * Everything the model, a tool or a user wrote is escaped; no raw HTML passes; links are
 * http(s) only, with rel="noopener noreferrer nofollow"; image syntax becomes a link (no
 * remote image is ever loaded). Scans are linear-ish: a closer not found once is not
 * searched for again, and inputs are capped, so hostile output cannot hang the tab.
 */
export interface ChatRenderer {
  esc(s: unknown): string;
  markdown(src: string): string;
  /** `[{key, html}]`: one block per prompt (the user turn, the agent's replies, their usage). */
  conversation(messages: unknown): Array<{ key: string; html: string }>;
}

export function chatRenderer(): ChatRenderer {
  const MAX_TEXT = 100_000;
  const MAX_OUTPUT = 20_000;
  const ESC: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;', '`': '&#96;' };
  const esc = (s: unknown): string => String(s ?? '').replace(/[&<>"'`]/g, (c) => ESC[c] as string);
  const cap = (s: string, n: number) => (s.length > n ? s.slice(0, n) + '\n… (' + (s.length - n) + ' more characters)' : s);

  /** An absolute http(s) URL, normalised (quotes and spaces percent-encoded), or null. */
  const safeUrl = (raw: string): string | null => {
    try {
      const u = new URL(raw.trim());
      return u.protocol === 'http:' || u.protocol === 'https:' ? u.href : null;
    } catch {
      return null;
    }
  };
  const link = (href: string, label: string) => '<a href="' + esc(href) + '" rel="noopener noreferrer nofollow" target="_blank">' + label + '</a>';

  /** The `)` closing a link target that starts at `from` (balanced, as `f(x)` in a URL), within 2048 characters. */
  const closingParen = (s: string, from: number): number => {
    let depth = 1;
    for (let j = from; j < s.length && j < from + 2048; j++) {
      const c = s[j];
      if (c === '\n') return -1;
      if (c === '(') depth++;
      else if (c === ')' && --depth === 0) return j;
    }
    return -1;
  };

  function inline(s: string, inLink: boolean): string {
    const memo: Record<string, number> = {};
    // The first `needle` at or after `from`; `from` only grows within one call, so a
    // remembered answer stays right (and a closer never found is never looked for again).
    const find = (needle: string, from: number): number => {
      const c = memo[needle];
      if (c !== undefined && (c === -1 || c >= from)) return c;
      const r = s.indexOf(needle, from);
      memo[needle] = r;
      return r;
    };
    let out = '';
    let i = 0;
    while (i < s.length) {
      const ch = s[i] as string;
      if (ch === '`') {
        let n = 1;
        while (s[i + n] === '`') n++;
        const fence = '`'.repeat(n);
        const close = find(fence, i + n);
        if (close > 0) {
          out += '<code>' + esc(s.slice(i + n, close)) + '</code>';
          i = close + n;
          continue;
        }
        out += esc(fence);
        i += n;
        continue;
      }
      const image = ch === '!' && s[i + 1] === '[';
      if (ch === '[' || image) {
        const open = image ? i + 1 : i;
        const end = find(']', open + 1);
        if (end > 0 && s[end + 1] === '(') {
          const close = closingParen(s, end + 2);
          if (close > 0) {
            const label = s.slice(open + 1, end);
            const target = s.slice(end + 2, close).trim().split(/\s+/)[0] ?? '';
            const href = safeUrl(target);
            const text = image ? esc('image: ' + (label || target)) : inline(label, true);
            out += href && !inLink ? link(href, text) : text;
            i = close + 1;
            continue;
          }
        }
      }
      if ((ch === '*' || ch === '_') && s[i + 1] === ch) {
        const mark = ch + ch;
        const close = find(mark, i + 2);
        const inner = close > 0 ? s.slice(i + 2, close) : '';
        if (inner && !/^\s|\s$/.test(inner)) {
          out += '<strong>' + inline(inner, inLink) + '</strong>';
          i = close + 2;
          continue;
        }
        out += esc(mark);
        i += 2;
        continue;
      }
      if ((ch === '*' || ch === '_') && !(ch === '_' && /[A-Za-z0-9]/.test(s[i - 1] ?? ''))) {
        const close = find(ch, i + 1);
        const inner = close > 0 ? s.slice(i + 1, close) : '';
        if (inner && !/^\s|\s$/.test(inner) && !(ch === '_' && /[A-Za-z0-9]/.test(s[close + 1] ?? ''))) {
          out += '<em>' + inline(inner, inLink) + '</em>';
          i = close + 1;
          continue;
        }
      }
      if (!inLink && (ch === 'h' || ch === 'H') && /^https?:\/\//i.test(s.slice(i, i + 8))) {
        const m = /^[^\s<>"'`]+/.exec(s.slice(i, i + 2048));
        const url = m ? m[0].replace(/[.,;:!?)\]]+$/, '') : '';
        const href = safeUrl(url);
        if (href) {
          out += link(href, esc(url));
          i += url.length;
          continue;
        }
      }
      out += esc(ch);
      i++;
    }
    return out;
  }

  const FENCE = /^ {0,3}(`{3,}|~{3,})\s*([\w+.#-]*)/;
  const HEADING = /^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$/;
  const ITEM = /^\s*([-*+]|\d{1,9}[.)])\s+(.*)$/;
  const QUOTE = /^ {0,3}>\s?(.*)$/;
  const RULE = /^ {0,3}([-*_])(\s*\1){2,}\s*$/;
  const startsBlock = (l: string) => FENCE.test(l) || HEADING.test(l) || ITEM.test(l) || QUOTE.test(l) || RULE.test(l);

  function blocks(lines: string[], depth: number): string {
    let out = '';
    let i = 0;
    while (i < lines.length) {
      const line = lines[i] as string;
      if (!line.trim()) {
        i++;
        continue;
      }
      const fence = FENCE.exec(line);
      if (fence) {
        const marker = fence[1] as string;
        const body: string[] = [];
        i++;
        while (i < lines.length && !(lines[i] as string).trim().startsWith(marker)) body.push(lines[i++] as string);
        i++; // the closing fence (or the end)
        out += '<pre class="code"><code>' + esc(body.join('\n')) + '</code></pre>';
        continue;
      }
      const heading = HEADING.exec(line);
      if (heading) {
        const level = Math.min(6, (heading[1] as string).length + 2);
        out += '<h' + level + '>' + inline(heading[2] as string, false) + '</h' + level + '>';
        i++;
        continue;
      }
      if (RULE.test(line)) {
        out += '<hr>';
        i++;
        continue;
      }
      if (QUOTE.test(line) && depth < 4) {
        const body: string[] = [];
        let q: RegExpExecArray | null;
        while (i < lines.length && (q = QUOTE.exec(lines[i] as string))) {
          body.push(q[1] as string);
          i++;
        }
        out += '<blockquote>' + blocks(body, depth + 1) + '</blockquote>';
        continue;
      }
      const first = ITEM.exec(line);
      if (first) {
        const ordered = /\d/.test((first[1] as string)[0] as string);
        const items: string[] = [];
        while (i < lines.length) {
          const l = lines[i] as string;
          const m = ITEM.exec(l);
          if (m) items.push(m[2] as string);
          else if (l.trim() && /^\s/.test(l) && items.length) items[items.length - 1] += '\n' + l.trim();
          else break;
          i++;
        }
        const tag = ordered ? 'ol' : 'ul';
        out += '<' + tag + '>' + items.map((t) => '<li>' + t.split('\n').map((x) => inline(x, false)).join('<br>') + '</li>').join('') + '</' + tag + '>';
        continue;
      }
      const para: string[] = [];
      while (i < lines.length && (lines[i] as string).trim() && !(para.length && startsBlock(lines[i] as string))) para.push(lines[i++] as string);
      out += '<p>' + para.map((x) => inline(x.trim(), false)).join('<br>') + '</p>';
    }
    return out;
  }

  const markdown = (src: string): string => blocks(cap(String(src ?? ''), MAX_TEXT).replace(/\r\n?/g, '\n').split('\n'), 0);

  type Obj = Record<string, unknown>;
  const obj = (v: unknown): Obj => (v && typeof v === 'object' ? (v as Obj) : {});
  const str = (v: unknown): string => (typeof v === 'string' ? v : '');
  const num = (v: unknown): number => (typeof v === 'number' && isFinite(v) ? v : 0);
  const errorText = (e: unknown): string => {
    const err = obj(e);
    const data = obj(err.data);
    return str(data.message) || str(err.message) || str(err.name) || 'error';
  };

  function toolPart(p: Obj): string {
    const state = obj(p.state);
    const status = str(state.status) || 'pending';
    const name = str(p.tool) || 'tool';
    const title = str(state.title);
    const input = state.input === undefined ? '' : cap(JSON.stringify(state.input, null, 2) ?? '', MAX_OUTPUT);
    const output = status === 'error' ? str(state.error) : str(state.output);
    return '<details class="tool tool-' + esc(status) + '" data-part="' + esc(str(p.id)) + '"><summary><span class="tool-name">' + esc(name) + '</span> <span class="muted">' +
      esc(status) + (title ? ' · ' + esc(title) : '') + '</span></summary>' +
      (input ? '<div class="muted">Input</div><pre class="code">' + esc(input) + '</pre>' : '') +
      (output ? '<div class="muted">' + (status === 'error' ? 'Error' : 'Output') + '</div><pre class="code' + (status === 'error' ? ' bad' : '') + '">' + esc(cap(output, MAX_OUTPUT)) + '</pre>' : '') +
      '</details>';
  }

  function agentParts(info: Obj, parts: unknown[]): string {
    let out = '';
    for (const raw of parts) {
      const p = obj(raw);
      const type = str(p.type);
      if (type === 'text' && !p.synthetic && str(p.text)) out += '<div class="md">' + markdown(str(p.text)) + '</div>';
      else if (type === 'reasoning' && str(p.text)) out += '<details class="reasoning"><summary class="muted">Thinking</summary><div class="md">' + markdown(str(p.text)) + '</div></details>';
      else if (type === 'tool') out += toolPart(p);
      else if (type === 'retry') out += '<p class="retry warn">Retry ' + esc(num(p.attempt)) + ': ' + esc(errorText(p.error)) + '</p>';
    }
    if (info.error) {
      const e = obj(info.error);
      const aborted = str(e.name) === 'MessageAbortedError';
      out += '<p class="turn-error' + (aborted ? ' muted' : ' bad') + '" role="alert">' + (aborted ? 'Aborted.' : '<strong>' + esc(str(e.name) || 'Error') + '</strong>: ' + esc(errorText(e))) + '</p>';
    }
    return out;
  }

  function conversation(messages: unknown): Array<{ key: string; html: string }> {
    const list = Array.isArray(messages) ? messages : [];
    const groups: Array<{ key: string; user: string; agent: string; input: number; output: number; models: string[] }> = [];
    for (const raw of list) {
      const m = obj(raw);
      const info = obj(m.info);
      const parts = Array.isArray(m.parts) ? m.parts : [];
      if (str(info.role) === 'user') {
        const text = parts.map(obj).filter((p) => str(p.type) === 'text' && !p.synthetic).map((p) => str(p.text)).join('\n\n');
        groups.push({ key: str(info.id), user: text, agent: '', input: 0, output: 0, models: [] });
        continue;
      }
      if (!groups.length) groups.push({ key: 'start', user: '', agent: '', input: 0, output: 0, models: [] });
      const g = groups[groups.length - 1]!;
      g.agent += agentParts(info, parts);
      const tokens = obj(info.tokens);
      g.input += num(tokens.input);
      g.output += num(tokens.output);
      const model = str(info.modelID);
      if (model && g.models.indexOf(model) < 0) g.models.push(model);
    }
    return groups.map((g) => ({
      key: g.key,
      html: '<div class="turn" data-turn="' + esc(g.key) + '">' +
        (g.user ? '<div class="user"><div class="who">You</div><div class="said">' + esc(cap(g.user, MAX_TEXT)) + '</div></div>' : '') +
        (g.agent ? '<div class="agent"><div class="who">Agent</div>' + g.agent + '</div>' : '') +
        (g.input || g.output ? '<p class="usage muted">' + esc(g.models.join(', ') || 'model') + ' · ' + esc(g.input) + ' input tokens · ' + esc(g.output) + ' output tokens</p>' : '') +
        '</div>',
    }));
  }

  return { esc, markdown, conversation };
}
