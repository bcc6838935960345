import { Router } from 'express';

/**
 * The dashboard's only static files, inline here (no front-end build): a stylesheet and a
 * small script that adds live updates, fetch-submitted forms and the chat stream on top
 * of pages that already work without it.
 */
const CSS = `
:root{--fg:#1b1f24;--muted:#59636e;--bg:#fff;--line:#d1d9e0;--accent:#0969da;--ok:#1a7f37;--bad:#cf222e;--warn:#9a6700;--add:#e6ffec;--del:#ffebe9;font-family:system-ui,sans-serif;color:var(--fg);background:var(--bg)}
body{margin:0;line-height:1.45}main{max-width:1100px;margin:0 auto;padding:1rem}
.skip{position:absolute;left:-999px}.skip:focus{left:1rem;top:1rem;background:#fff;padding:.5rem;z-index:9}
.top{display:flex;flex-wrap:wrap;gap:.5rem;align-items:center;padding:.5rem 1rem;border-bottom:1px solid var(--line)}
.brand{font-weight:700;text-decoration:none;color:var(--fg)}.sep{color:var(--muted);margin:0 .3rem}.me{margin-left:auto;display:flex;gap:.8rem;align-items:center}
a{color:var(--accent)}:focus-visible{outline:3px solid var(--accent);outline-offset:2px}
.muted,.hint{color:var(--muted)}.warn{color:var(--warn)}.inline{display:inline}
button{font:inherit;padding:.4rem .9rem;border:1px solid var(--line);border-radius:6px;background:#f6f8fa;cursor:pointer;min-height:2.2rem}
button.primary{background:var(--ok);color:#fff;border-color:var(--ok)}button.danger{color:var(--bad)}button.link{border:0;background:none;color:var(--accent);padding:0;min-height:0}
button[disabled]{opacity:.5;cursor:not-allowed}
input,textarea{font:inherit;padding:.35rem;border:1px solid var(--line);border-radius:6px;max-width:100%;box-sizing:border-box}
.stack{display:flex;flex-direction:column;gap:.6rem;max-width:40rem}.stack label{display:flex;flex-direction:column;gap:.2rem}
.row{flex-direction:row;flex-wrap:wrap;align-items:flex-end}.narrow{max-width:28rem;margin:2rem auto}
.actions{display:flex;gap:.5rem;flex-wrap:wrap;margin:.6rem 0}
.notice{padding:.6rem .8rem;border-radius:6px;background:#ddf4ff;border:1px solid #54aeff}.notice.error{background:var(--del);border-color:var(--bad)}.notice.ok{background:var(--add);border-color:var(--ok)}
.badge{display:inline-block;padding:0 .5rem;border-radius:1rem;font-size:.85em;border:1px solid var(--line)}
.s-open,.s-running,.s-live{background:var(--add);color:var(--ok)}.s-missing{background:var(--del);color:var(--bad);font-weight:600}.s-merged{background:#fbefff;color:#8250df}.s-closed,.s-failed{background:var(--del);color:var(--bad)}
table.list{border-collapse:collapse;width:100%}table.list th,table.list td{text-align:left;padding:.4rem;border-bottom:1px solid var(--line)}
.tabs{display:flex;flex-wrap:wrap;gap:.8rem;margin:.5rem 0}.tabs.sections{padding-bottom:.4rem;border-bottom:1px solid var(--line)}section.app{border-bottom:1px solid var(--line);padding-bottom:.6rem}.tabs a[aria-current]{font-weight:700;text-decoration:none;color:var(--fg)}
.cards{list-style:none;padding:0}.cards li{padding:.6rem 0;border-bottom:1px solid var(--line)}
.preview{padding:.6rem .8rem;border-radius:6px;border:1px solid var(--line);margin:.5rem 0}.preview.ok{border-color:var(--ok)}.preview.bad{border-color:var(--bad);background:var(--del)}
pre.text{white-space:pre-wrap;font:inherit}code{font-family:ui-monospace,monospace;font-size:.9em;overflow-wrap:anywhere}
.files{columns:2 20rem;font-size:.9em}.plus{color:var(--ok)}.minus{color:var(--bad)}
.st{display:inline-block;width:1.2em;text-align:center;font-weight:700}.st-added{color:var(--ok)}.st-deleted{color:var(--bad)}.st-modified{color:var(--warn)}
details.file{border:1px solid var(--line);border-radius:6px;margin:.6rem 0;content-visibility:auto;contain-intrinsic-size:auto 480px}details.file>summary{padding:.4rem .6rem;background:#f6f8fa;cursor:pointer;overflow-wrap:anywhere}
.scroll{overflow-x:auto}table.diff{border-collapse:collapse;width:100%;font:12px/1.4 ui-monospace,monospace}
table.diff td{padding:0 .4rem;white-space:pre;vertical-align:top}table.diff td:nth-child(-n+2){color:var(--muted);text-align:right;user-select:none;width:1%}
tr.add td:last-child{background:var(--add)}tr.del td:last-child{background:var(--del)}tr.hunk td{background:#ddf4ff;color:var(--muted)}
.timeline{padding-left:1.2rem}.timeline li{margin:.3rem 0}.timeline li.current{font-weight:700}.ev{font-weight:600}
.facts{display:grid;grid-template-columns:max-content 1fr;gap:.2rem 1rem}.facts dd{margin:0}
.chat .log{border:1px solid var(--line);border-radius:6px;min-height:4rem;max-height:24rem;overflow:auto;padding:.5rem;white-space:pre-wrap}
.diff td:nth-child(-n+2){cursor:pointer}.comment{border-left:3px solid var(--line);padding:.2rem .6rem;margin:.3rem 0;white-space:normal}.comment.resolved{opacity:.6}.comment form.inline{display:inline}.preview-frame{width:100%;height:24rem;border:1px solid var(--line);border-radius:6px}.secret{user-select:all;font-size:1rem}.sr{position:absolute;left:-999px}
@media (max-width:600px){main{padding:.6rem}table.list thead{display:none}table.list tr{display:block;border-bottom:1px solid var(--line);padding:.3rem 0}table.list td{display:inline-block;border:0;padding:.1rem .4rem}table.list td[data-label]::before{content:attr(data-label) ": ";color:var(--muted)}.files{columns:1}}
`;

const JS = `(() => {
'use strict';
const csrf = () => (document.querySelector('meta[name=csrf-token]') || {}).content || '';
const notice = (kind, text) => { const n = document.getElementById('notice'); if (!n) return; n.textContent = ''; const p = document.createElement('p'); p.className = 'notice ' + kind; p.textContent = text; n.appendChild(p); };
let pending = null;
async function refreshLive() {
  const res = await fetch(location.href, { headers: { accept: 'text/html' }, credentials: 'same-origin' });
  if (!res.ok) return;
  const doc = new DOMParser().parseFromString(await res.text(), 'text/html');
  for (const el of doc.querySelectorAll('[data-live]')) {
    const cur = document.querySelector('[data-live="' + el.getAttribute('data-live') + '"]');
    if (cur) cur.replaceWith(document.importNode(el, true));
  }
  bind(document);
  document.dispatchEvent(new CustomEvent('svc:live'));
}
const scheduleRefresh = () => { clearTimeout(pending); pending = setTimeout(refreshLive, 150); };
const src = document.querySelector('[data-live-src]');
if (src && window.EventSource) {
  const stream = src.getAttribute('data-live-stream');
  const es = new EventSource(src.getAttribute('data-live-src'));
  es.onmessage = (m) => { try { const e = JSON.parse(m.data); if (!stream || e.stream_id.endsWith(stream)) scheduleRefresh(); } catch (_) {} };
  window.addEventListener('pagehide', () => es.close());
}
function bind(root) {
  for (const f of root.querySelectorAll('form[data-confirm]')) {
    if (f.dataset.bound) continue; f.dataset.bound = '1';
    f.addEventListener('submit', (ev) => { if (!confirm(f.getAttribute('data-confirm'))) ev.preventDefault(); });
  }
  for (const f of root.querySelectorAll('form[data-fetch]')) {
    if (f.dataset.bound) continue; f.dataset.bound = '1';
    f.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      const btn = f.querySelector('button'); if (btn) btn.disabled = true;
      try {
        const res = await fetch(f.action, { method: 'POST', credentials: 'same-origin', headers: { accept: 'application/json', 'content-type': 'application/x-www-form-urlencoded', 'x-csrf-token': csrf() }, body: new URLSearchParams(new FormData(f)) });
        const body = await res.json().catch(() => ({}));
        if (res.ok) { notice('ok', body.notice || 'Done.'); await refreshLive(); }
        else notice('error', (body.error ? body.error + ': ' : '') + (body.message || 'The request failed.'));
      } catch (_) { notice('error', 'The server could not be reached.'); }
      finally { if (btn && document.contains(btn)) btn.disabled = false; }
    });
  }
}
bind(document);
// A click on a line number of the diff points the review form at that line (old or new side).
document.addEventListener('click', (ev) => {
  const td = ev.target && ev.target.closest ? ev.target.closest('table.diff td') : null;
  const form = document.getElementById('comment-form');
  if (!td || !form || td.cellIndex > 1 || !/^\\d+$/.test(td.textContent.trim())) return;
  const file = td.closest('details.file');
  const path = form.querySelector('[name=path]');
  if (!file || !path) return;
  path.value = file.getAttribute('data-path');
  form.querySelector('[name=line]').value = td.textContent.trim();
  form.querySelector('[name=side]').value = td.cellIndex === 0 ? 'LEFT' : 'RIGHT';
  const more = form.querySelector('details'); if (more) more.open = true;
  form.querySelector('textarea').focus();
});
const chat = document.querySelector('[data-chat]');
if (chat && window.EventSource) {
  const log = document.getElementById('chat-log');
  const parts = new Map();
  const es = new EventSource(chat.getAttribute('data-chat') + '/event');
  es.onmessage = (m) => {
    let e; try { e = JSON.parse(m.data); } catch (_) { return; }
    const part = e && e.properties && e.properties.part;
    if (e.type === 'message.part.updated' && part && part.type === 'text') {
      let el = parts.get(part.id);
      if (!el) { el = document.createElement('div'); parts.set(part.id, el); log.appendChild(el); }
      el.textContent = part.text; log.scrollTop = log.scrollHeight;
    }
  };
  const form = chat.querySelector('[data-chat-form]');
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const text = form.querySelector('textarea').value; if (!text.trim()) return;
    const me = document.createElement('div'); me.className = 'me'; me.textContent = '> ' + text; log.appendChild(me);
    const res = await fetch(form.action, { method: 'POST', credentials: 'same-origin', headers: { accept: 'application/json', 'content-type': 'application/x-www-form-urlencoded', 'x-csrf-token': csrf() }, body: new URLSearchParams(new FormData(form)) });
    if (res.ok) form.querySelector('textarea').value = ''; else { const b = await res.json().catch(() => ({})); notice('error', b.message || 'The prompt was not delivered.'); }
  });
}
})();
`;

export function assetRoutes(): Router {
  const r = Router();
  r.get('/assets/app.css', (_req, res) => res.type('css').set('Cache-Control', 'public, max-age=300').send(CSS));
  r.get('/assets/app.js', (_req, res) => res.type('js').set('Cache-Control', 'public, max-age=300').send(JS));
  return r;
}
