import type { LimitedDiff as Diff } from '../../services/change-requests/diff-limits.js';
import { html, raw, escapeHtml, type Html } from './html.js';

/**
 * The rendered diff: one section per file with its stats, then its hunks as a table of
 * old/new line numbers. Built as one string (a 500-file diff renders in a few ms), every
 * line escaped. Past MAX_LINES the rest is listed by name only, with the CLI command.
 */
const MAX_LINES = 30_000;
const STATUS = { added: 'A', modified: 'M', deleted: 'D' } as const;

/** The patch cut at each `diff --git`, keyed by the new (or old) path. */
function sections(patch: string): Map<string, string[]> {
  const out = new Map<string, string[]>();
  const chunks = patch.split(/^(?=diff --git )/m);
  for (const chunk of chunks) {
    if (!chunk.startsWith('diff --git ')) continue;
    const lines = chunk.replace(/\n$/, '').split('\n');
    const plus = lines.find((l) => l.startsWith('+++ '));
    const minus = lines.find((l) => l.startsWith('--- '));
    let path = plus && plus !== '+++ /dev/null' ? plus.slice(4) : minus ? minus.slice(4) : '';
    path = path.replace(/^"?[ab]\//, '').replace(/"$/, '');
    if (!path) {
      const m = /^diff --git a\/(.*) b\/(.*)$/.exec(lines[0]!);
      path = m ? m[2]! : lines[0]!;
    }
    out.set(path, lines);
  }
  return out;
}

/** Rows to show under a line of the diff (review comments at that line): `''` for none. */
export type LineAnnotator = (path: string, side: 'LEFT' | 'RIGHT', line: number) => string;

function fileBody(lines: string[], budget: { left: number }, path = '', annotate?: LineAnnotator): string {
  let oldNo = 0;
  let newNo = 0;
  let rows = '';
  let inHunk = false;
  for (const line of lines) {
    if (line.startsWith('@@')) {
      const m = /^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@/.exec(line);
      oldNo = m ? Number(m[1]) : 0;
      newNo = m ? Number(m[2]) : 0;
      inHunk = true;
      rows += `<tr class="hunk"><td></td><td></td><td>${escapeHtml(line)}</td></tr>`;
      continue;
    }
    if (!inHunk) continue;
    if (budget.left-- <= 0) {
      rows += '<tr class="hunk"><td></td><td></td><td>… (truncated)</td></tr>';
      break;
    }
    const c = line[0];
    const at = (side: 'LEFT' | 'RIGHT', n: number) => (annotate ? annotate(path, side, n) : '');
    if (c === '+') rows += `<tr class="add"><td></td><td>${newNo}</td><td>${escapeHtml(line)}</td></tr>${at('RIGHT', newNo++)}`;
    else if (c === '-') rows += `<tr class="del"><td>${oldNo}</td><td></td><td>${escapeHtml(line)}</td></tr>${at('LEFT', oldNo++)}`;
    else if (c === '\\') rows += `<tr class="meta"><td></td><td></td><td>${escapeHtml(line)}</td></tr>`;
    else rows += `<tr><td>${oldNo}</td><td>${newNo}</td><td>${escapeHtml(line)}</td></tr>${at('LEFT', oldNo++)}${at('RIGHT', newNo++)}`;
  }
  return rows;
}

export function renderDiff(diff: Diff, crNumber: number, annotate?: LineAnnotator): Html {
  if (diff.files.length === 0) return html`<p class="muted">No changes between the branches.</p>`;
  const bySection = sections(diff.patch);
  const budget = { left: MAX_LINES };
  let out = '';
  diff.files.forEach((f, i) => {
    const head = `<span class="st st-${f.status}" title="${f.status}">${STATUS[f.status]}</span> <span class="path">${escapeHtml(f.path)}</span> <span class="stat"><span class="plus">+${f.additions}</span> <span class="minus">−${f.deletions}</span></span>`;
    let body: string;
    if (f.binary) body = '<p class="muted">Binary file.</p>';
    else if (budget.left <= 0) body = `<p class="muted">Not shown: the diff is large. Run <code>svc cr diff ${crNumber}</code>.</p>`;
    else {
      const rows = fileBody(bySection.get(f.path) ?? [], budget, f.path, annotate);
      body = rows ? `<div class="scroll"><table class="diff"><tbody>${rows}</tbody></table></div>` : '<p class="muted">No textual change (mode or rename only).</p>';
    }
    out += `<details class="file" id="file-${i + 1}" data-path="${escapeHtml(f.path)}" open><summary>${head}</summary>${body}</details>`;
  });
  return raw(out);
}

export function fileList(diff: Diff): Html {
  return html`<ol class="files">${diff.files.map(
    (f, i) => html`<li><a href="#file-${i + 1}"><span class="st st-${f.status}">${STATUS[f.status]}</span> ${f.path}</a> <span class="plus">+${f.additions}</span> <span class="minus">−${f.deletions}</span></li>`,
  )}</ol>`;
}
