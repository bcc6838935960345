#!/usr/bin/env node
/**
 * A scripted agent runtime that answers like `opencode serve` does on its event feed:
 * a prompt becomes `message.updated` (user, then assistant), the assistant's text part
 * growing word by word in `message.part.updated` events (with `delta`), then
 * `session.status` idle and `session.idle`. A prompt containing "slow" answers one word
 * per 200 ms (40 words), so a test can abort it midway: the runtime then reports
 * `session.error` (MessageAbortedError) and goes idle. A prompt containing "tool" first
 * runs a `bash` tool part (running, then completed with output); one containing "explode"
 * fails at once with `session.error` (an APIError). `GET /session/:id/message` answers the
 * history (`[{info, parts}]`) as opencode does.
 *
 *   node chat-runtime.js serve --port P --hostname H
 */
import http, { type ServerResponse } from 'node:http';
import { listenArgs, sendJson as json } from '../sandbox/support/runtime-http.js';

const { port, hostname } = listenArgs();

const feeds = new Set<ServerResponse>();
const sessions: Array<{ id: string; title: string; time: { created: number; updated: number } }> = [];
const runs = new Map<string, { stop: () => void }>();
type Msg = { info: Record<string, unknown>; parts: Array<Record<string, unknown>> };
const history = new Map<string, Msg[]>();
const record = (sessionID: string, m: Msg) => {
  const list = history.get(sessionID) ?? [];
  list.push(m);
  history.set(sessionID, list);
  return m;
};
/** Emits a part and keeps it in its message (replacing the part of the same id). */
const partUpdated = (m: Msg, part: Record<string, unknown>, extra: Record<string, unknown> = {}) => {
  const at = m.parts.findIndex((x) => x.id === part.id);
  if (at >= 0) m.parts[at] = part;
  else m.parts.push(part);
  emit('message.part.updated', { part, ...extra });
};
let n = 0;
const id = (p: string) => `${p}_${++n}`;

const emit = (type: string, properties: Record<string, unknown>) => {
  const line = `data: ${JSON.stringify({ type, properties })}\n\n`;
  for (const f of feeds) f.write(line);
};

function answer(sessionID: string, text: string) {
  const user = id('msg');
  const u = record(sessionID, { info: { id: user, sessionID, role: 'user' }, parts: [] });
  emit('message.updated', { info: u.info });
  partUpdated(u, { id: id('prt'), sessionID, messageID: user, type: 'text', text });
  emit('session.status', { sessionID, status: { type: 'busy' } });
  const msg = id('msg');
  const part = id('prt');
  const a = record(sessionID, { info: { id: msg, sessionID, role: 'assistant', parentID: user, modelID: 'chat-runtime', tokens: { input: 10, output: 5 } }, parts: [] });
  emit('message.updated', { info: a.info });
  if (text.includes('explode')) {
    const error = { name: 'APIError', data: { message: 'the upstream model exploded' } };
    a.info.error = error;
    emit('message.updated', { info: a.info });
    emit('session.error', { sessionID, error });
    emit('session.status', { sessionID, status: { type: 'idle' } });
    emit('session.idle', { sessionID });
    return;
  }
  if (text.includes('tool')) {
    const tool = { id: id('prt'), sessionID, messageID: msg, type: 'tool', tool: 'bash', callID: id('call'), state: { status: 'running', input: { command: 'ls' }, title: 'ls' } };
    partUpdated(a, tool);
    partUpdated(a, { ...tool, state: { status: 'completed', input: { command: 'ls' }, title: 'ls', output: 'README.md\n' } });
  }
  const slow = text.includes('slow');
  const words = slow ? Array.from({ length: 40 }, (_, i) => `w${i}`) : `You said: ${text}. Done.`.split(' ');
  let i = 0;
  let sofar = '';
  let timer: NodeJS.Timeout | undefined;
  const finish = (aborted: boolean) => {
    clearTimeout(timer);
    runs.delete(sessionID);
    if (aborted) emit('session.error', { sessionID, error: { name: 'MessageAbortedError', data: { message: 'aborted' } } });
    emit('session.status', { sessionID, status: { type: 'idle' } });
    emit('session.idle', { sessionID });
  };
  const tick = () => {
    if (i >= words.length) return finish(false);
    const delta = (i === 0 ? '' : ' ') + words[i++];
    sofar += delta;
    partUpdated(a, { id: part, sessionID, messageID: msg, type: 'text', text: sofar }, { delta });
    timer = setTimeout(tick, slow ? 200 : 5);
  };
  runs.set(sessionID, { stop: () => finish(true) });
  timer = setTimeout(tick, 5);
}

const server = http.createServer((req, res) => {
  const u = new URL(req.url ?? '/', 'http://x');
  let body = '';
  req.on('data', (c: Buffer) => (body += c.toString()));
  req.on('end', () => {
    const p = u.pathname;
    if (p === '/global/health') return json(res, 200, { healthy: true, version: 'chat-runtime' });
    if (p === '/event' && req.method === 'GET') {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      res.write(`data: ${JSON.stringify({ type: 'server.connected', properties: {} })}\n\n`);
      feeds.add(res);
      res.on('close', () => feeds.delete(res));
      return;
    }
    if (p === '/session' && req.method === 'GET') return json(res, 200, sessions);
    if (p === '/session' && req.method === 'POST') {
      const s = { id: id('ses'), title: 'chat', time: { created: Date.now(), updated: Date.now() } };
      sessions.push(s);
      return json(res, 200, s);
    }
    const h = /^\/session\/([^/]+)\/message$/.exec(p);
    if (h && req.method === 'GET') return json(res, 200, history.get(decodeURIComponent(h[1]!)) ?? []);
    const m = /^\/session\/([^/]+)\/(prompt_async|abort)$/.exec(p);
    if (m && req.method === 'POST') {
      const sid = decodeURIComponent(m[1]!);
      if (!sessions.some((s) => s.id === sid)) return json(res, 404, { name: 'NotFoundError' });
      if (m[2] === 'abort') {
        runs.get(sid)?.stop();
        return json(res, 200, true);
      }
      const parsed = JSON.parse(body || '{}') as { parts?: Array<{ type: string; text?: string }> };
      const text = (parsed.parts ?? []).map((x) => x.text ?? '').join('');
      res.writeHead(204).end();
      answer(sid, text);
      return;
    }
    json(res, 404, { error: 'not found', path: p });
  });
});
server.listen(port, hostname, () => process.stdout.write(`chat runtime on ${hostname}:${port}\n`));
process.on('SIGTERM', () => process.exit(0));
const parent = process.ppid;
setInterval(() => {
  if (process.ppid !== parent) process.exit(0);
}, 500).unref();
