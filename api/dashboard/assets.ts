import { Router } from 'express';
import { chatRenderer } from './chat-render.js';

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
.brand{font-weight:700;text-decoration:none;color:var(--fg)}.sep{color:var(--muted);margin:0 .3rem}.me{margin-left:auto;display:flex;flex-wrap:wrap;gap:.8rem;align-items:center}.who{overflow-wrap:anywhere}
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
.stats{display:grid;grid-template-columns:repeat(auto-fill,minmax(10rem,1fr));gap:.5rem;margin:.8rem 0}.stat{border:1px solid var(--line);border-radius:6px;padding:.4rem .6rem}.stat dt{color:var(--muted);font-size:.85em}.stat dd{margin:0;font-size:1.15em;font-weight:600;overflow-wrap:anywhere}
.charts{display:grid;grid-template-columns:repeat(auto-fit,minmax(min(100%,22rem),1fr));gap:1rem;margin:1rem 0}.chart{margin:0;min-width:0}.chart figcaption{font-weight:600;margin-bottom:.3rem}.chart svg{display:block;max-width:34rem}.scroll{overflow-x:auto}.scroll table.list{font-size:.85em}
.cards{list-style:none;padding:0}.cards li{padding:.6rem 0;border-bottom:1px solid var(--line)}
.preview{padding:.6rem .8rem;border-radius:6px;border:1px solid var(--line);margin:.5rem 0}.preview.ok{border-color:var(--ok)}.preview.bad{border-color:var(--bad);background:var(--del)}
pre.text{white-space:pre-wrap;font:inherit}code{font-family:ui-monospace,monospace;font-size:.9em;overflow-wrap:anywhere}
.files{columns:2 20rem;font-size:.9em}.plus{color:var(--ok)}.minus{color:var(--bad)}
.st{display:inline-block;width:1.2em;text-align:center;font-weight:700}.st-added{color:var(--ok)}.st-deleted{color:var(--bad)}.st-modified{color:var(--warn)}
details.file{border:1px solid var(--line);border-radius:6px;margin:.6rem 0;content-visibility:auto;contain-intrinsic-size:auto 480px}details.file>summary{padding:.4rem .6rem;background:#f6f8fa;cursor:pointer;overflow-wrap:anywhere}
.scroll{overflow-x:auto}.scroll table.list{font-size:.85em}table.diff{border-collapse:collapse;width:100%;font:12px/1.4 ui-monospace,monospace}
table.diff td{padding:0 .4rem;white-space:pre;vertical-align:top}table.diff td:nth-child(-n+2){color:var(--muted);text-align:right;user-select:none;width:1%}
tr.add td:last-child{background:var(--add)}tr.del td:last-child{background:var(--del)}tr.hunk td{background:#ddf4ff;color:var(--muted)}
.timeline{padding-left:1.2rem}.timeline li{margin:.3rem 0}.timeline li.current{font-weight:700}.ev{font-weight:600}
.facts{display:grid;grid-template-columns:max-content 1fr;gap:.2rem 1rem}.facts dd{margin:0}
.chat .log{border:1px solid var(--line);border-radius:6px;min-height:4rem;max-height:36rem;overflow:auto;padding:.5rem}
.turn{border-bottom:1px solid var(--line);padding:.4rem 0}.turn .who{font-weight:600;font-size:.85em;color:var(--muted)}.turn .said{white-space:pre-wrap;overflow-wrap:anywhere}
.turn .user{background:#f6f8fa;border-radius:6px;padding:.3rem .5rem;margin-bottom:.4rem}.md p{margin:.3rem 0}.md pre,pre.code{background:#f6f8fa;padding:.4rem;border-radius:6px;overflow-x:auto;white-space:pre-wrap;font:12px/1.4 ui-monospace,monospace}
pre.code.bad{background:var(--del)}details.tool,details.reasoning{border:1px solid var(--line);border-radius:6px;margin:.3rem 0;padding:0 .5rem}details.tool>summary,details.reasoning>summary{cursor:pointer;padding:.2rem 0}
.tool-name{font-family:ui-monospace,monospace;font-weight:600}.tool-error{border-color:var(--bad)}.turn-error.bad,pre.code.bad{color:var(--bad)}.usage{font-size:.85em;margin:.2rem 0}.chat-status{min-height:1.2em;margin:.3rem 0}
.preview-frame{width:100%;height:24rem;border:1px solid var(--line);border-radius:6px}.secret{user-select:all;font-size:1rem}.sr{position:absolute;left:-999px}
.diff td:nth-child(-n+2){cursor:pointer}.comment{border-left:3px solid var(--line);padding:.2rem .6rem;margin:.3rem 0;white-space:normal}.comment.resolved{opacity:.6}.comment form.inline{display:inline}
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
    if (!cur) continue;
    // What a person is typing survives the refresh (a check finishing, someone else's
    // comment): fields changed from their default keep their value, and the focus.
    const typed = [];
    for (const f of cur.querySelectorAll('textarea[name], input[name]:not([type=hidden]), select[name]')) {
      const changed = f.tagName === 'SELECT' ? Array.from(f.options).some((o) => o.selected !== o.defaultSelected) : f.value !== f.defaultValue;
      if (changed) typed.push({ form: (f.form && f.form.id) || '', name: f.name, value: f.value, focused: f === document.activeElement });
    }
    const next = document.importNode(el, true);
    cur.replaceWith(next);
    for (const t of typed) {
      const g = next.querySelector((t.form ? '#' + CSS.escape(t.form) + ' ' : '') + '[name="' + CSS.escape(t.name) + '"]');
      if (g) { g.value = t.value; if (t.focused) g.focus(); }
    }
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
        if (res.ok) { f.reset(); notice('ok', body.notice || 'Done.'); await refreshLive(); } // sent: its fields start again
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
if (chat) {
  // The conversation is the runtime's own history, read through the session proxy (so a
  // reload shows it again); its event feed only says when to read it again.
  const R = (${chatRenderer.toString()})();
  const base = chat.getAttribute('data-chat');
  const log = document.getElementById('chat-log');
  const status = document.getElementById('chat-status');
  const form = chat.querySelector('[data-chat-form]');
  const sidField = form.querySelector('input[name=session_id]');
  const shown = new Map();
  let sid = null, es = null, loading = false, again = false, timer = null, retry = null;
  const get = async (path) => {
    const res = await fetch(base + path, { credentials: 'same-origin', headers: { accept: 'application/json' } });
    if (!res.ok) throw new Error('HTTP ' + res.status);
    return res.json();
  };
  const stateOf = () => { const el = document.querySelector('[data-agent-state]'); return el ? el.getAttribute('data-agent-state') : 'ready'; };
  function render(messages) {
    const blocks = R.conversation(messages);
    const open = new Set(Array.from(log.querySelectorAll('details[open][data-part]'), (d) => d.getAttribute('data-part')));
    const atEnd = log.scrollTop + log.clientHeight >= log.scrollHeight - 20;
    const keep = new Set();
    let prev = null;
    for (const b of blocks) {
      keep.add(b.key);
      let cur = shown.get(b.key);
      if (!cur || cur.html !== b.html) {
        const el = document.createElement('div');
        el.innerHTML = b.html; // built by chat-render.ts: every input escaped
        const node = el.firstElementChild;
        for (const d of node.querySelectorAll('details[data-part]')) if (open.has(d.getAttribute('data-part'))) d.open = true;
        if (cur) cur.node.replaceWith(node); else if (prev) prev.after(node); else log.prepend(node);
        cur = { html: b.html, node };
        shown.set(b.key, cur);
      }
      prev = cur.node;
    }
    for (const [k, v] of shown) if (!keep.has(k)) { v.node.remove(); shown.delete(k); }
    if (atEnd) log.scrollTop = log.scrollHeight;
  }
  async function load() {
    if (loading) { again = true; return; }
    loading = true;
    try {
      if (!sid) {
        const list = await get('/session');
        const top = (Array.isArray(list) ? list : []).filter((x) => x && x.id && !x.parentID);
        top.sort((a, b) => ((b.time && (b.time.updated || b.time.created)) || 0) - ((a.time && (a.time.updated || a.time.created)) || 0));
        if (!top.length) return;
        sid = top[0].id; sidField.value = sid;
      }
      render(await get('/session/' + encodeURIComponent(sid) + '/message'));
    } catch (_) {
      clearTimeout(retry); retry = setTimeout(load, 2000); // the agent is still starting, or restarting
    } finally {
      loading = false;
      if (again) { again = false; schedule(); }
    }
  }
  const schedule = () => { clearTimeout(timer); timer = setTimeout(load, 120); };
  const say = (text) => { status.textContent = text; };
  function showError(text) {
    const p = document.createElement('p'); p.className = 'turn-error bad'; p.setAttribute('role', 'alert'); p.textContent = text; log.appendChild(p);
    log.scrollTop = log.scrollHeight;
  }
  function connect() {
    if (!window.EventSource || es) return;
    es = new EventSource(base + '/event');
    es.onopen = () => load();
    es.onerror = () => { if (es.readyState === 2) { es.close(); es = null; setTimeout(connect, 2000); } };
    es.onmessage = (m) => {
      let e; try { e = JSON.parse(m.data); } catch (_) { return; }
      const p = (e && e.properties) || {};
      const of = p.sessionID || (p.info && p.info.sessionID) || (p.part && p.part.sessionID);
      if (!sid && of) { schedule(); return; }
      if (of !== sid) return;
      if (e.type === 'session.status') {
        const st = p.status || {};
        say(st.type === 'busy' ? 'Thinking…' : st.type === 'retry' ? 'Retrying (attempt ' + st.attempt + '): ' + (st.message || '') : '');
      } else if (e.type === 'session.idle') { say(''); scheduleRefresh(); } // the head's tokens, the session's CRs
      else if (e.type === 'message.part.updated' && p.part && p.part.type === 'tool') {
        const s = p.part.state || {};
        if (s.status === 'running' || s.status === 'pending') say('Running ' + p.part.tool + '…');
      } else if (e.type === 'session.error') {
        const err = p.error || {};
        if (err.name !== 'MessageAbortedError') showError('The agent failed: ' + ((err.data && err.data.message) || err.name || 'unknown error'));
        say('');
      }
      schedule();
    };
    window.addEventListener('pagehide', () => es && es.close());
  }
  if (stateOf() !== 'starting') { connect(); load(); }
  document.addEventListener('svc:live', () => { if (stateOf() === 'ready') { connect(); schedule(); } });
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const area = form.querySelector('textarea');
    if (!area.value.trim()) return;
    const btn = form.querySelector('button'); btn.disabled = true;
    try {
      const res = await fetch(form.action, { method: 'POST', credentials: 'same-origin', headers: { accept: 'application/json', 'content-type': 'application/x-www-form-urlencoded', 'x-csrf-token': csrf() }, body: new URLSearchParams(new FormData(form)) });
      const b = await res.json().catch(() => ({}));
      if (res.ok) { area.value = ''; say('Thinking…'); if (!sid && b.session_id) { sid = b.session_id; sidField.value = sid; } connect(); schedule(); }
      else { const text = (b.message || 'The prompt was not delivered.'); showError(text); notice('error', text); }
    } catch (_) { notice('error', 'The server could not be reached.'); }
    finally { btn.disabled = false; }
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
