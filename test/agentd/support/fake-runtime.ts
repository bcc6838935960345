#!/usr/bin/env node
/**
 * A scripted stand-in for `opencode serve`, for the daemon's tests and benchmark.
 *
 *   node fake-runtime.js serve --port P --hostname H
 *
 * Env knobs: FAKE_RUNTIME_BOOT_DELAY_MS (wait before listening), FAKE_RUNTIME_ABORT=hang
 * (abort never answers), FAKE_RUNTIME_IGNORE_TERM=1 (survive SIGTERM).
 *
 * opencode-like routes: GET /global/health, POST /session, POST /session/:id/prompt_async,
 * POST /session/:id/abort, GET /event (SSE; `?count=&interval=` then the stream ends).
 * Test routes: GET /fake/state (argv, cwd, env, sessions, prompts), GET|POST /fake/echo
 * (method, url, headers, body), POST /fake/crash (exit 3 after answering), GET /fake/hello
 * (tiny JSON body, for benchmarks), GET /fake/page (HTML with a script), POST /fake/model (the body sent to `<provider svc's baseURL>/chat/completions`
 * with its apiKey, as opencode's provider would: answers the status and body it got), WebSocket echo on any upgrade.
 */
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import { WebSocketServer } from 'ws';

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

if (process.argv[2] !== 'serve') {
  process.stderr.write('usage: fake-runtime serve --port P --hostname H\n');
  process.exit(2);
}
const port = Number(arg('--port') ?? 4096);
const hostname = arg('--hostname') ?? '127.0.0.1';
const bootDelay = Number(process.env.FAKE_RUNTIME_BOOT_DELAY_MS ?? 0);

const sessions = new Map<string, { id: string; title: string | undefined; aborted: number }>();
const prompts: { session_id: string; body: unknown }[] = [];
let nextId = 1;

const json = (res: ServerResponse, status: number, body: unknown) => {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
};

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve) => {
    let s = '';
    req.setEncoding('utf8');
    req.on('data', (d: string) => (s += d));
    req.on('end', () => resolve(s));
    req.on('error', () => resolve(s));
  });
}

const parse = (s: string): unknown => {
  try {
    return s ? JSON.parse(s) : undefined;
  } catch {
    return s;
  }
};

async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const url = new URL(req.url ?? '/', 'http://fake');
  const p = url.pathname;
  if (req.method === 'GET' && p === '/fake/hello') {
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': 7 });
    res.end('"hello"');
    return;
  }
  if (req.method === 'GET' && p === '/fake/page') {
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end('<script>alert(document.domain)</script>');
    return;
  }
  if (p === '/global/health') return json(res, 200, { healthy: true, version: 'fake' });
  if (req.method === 'POST' && p === '/session') {
    const body = parse(await readBody(req)) as { title?: string } | undefined;
    const id = `ses_fake${nextId++}`;
    sessions.set(id, { id, title: body?.title, aborted: 0 });
    return json(res, 200, { id, title: body?.title ?? 'New session', time: { created: Date.now() } });
  }
  const m = /^\/session\/([^/]+)\/(prompt_async|abort)$/.exec(p);
  if (req.method === 'POST' && m) {
    const session = sessions.get(decodeURIComponent(m[1]!));
    const body = parse(await readBody(req));
    if (!session) return json(res, 404, { name: 'NotFoundError', data: { message: 'session not found' } });
    if (m[2] === 'prompt_async') {
      prompts.push({ session_id: session.id, body });
      res.writeHead(204).end();
      return;
    }
    if (process.env.FAKE_RUNTIME_ABORT === 'hang') return; // never answers
    session.aborted++;
    return json(res, 200, true);
  }
  if (req.method === 'GET' && p === '/event') {
    const count = Number(url.searchParams.get('count') ?? 3);
    const interval = Number(url.searchParams.get('interval') ?? 100);
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    let i = 0;
    const tick = () => {
      if (res.destroyed) return;
      if (i >= count) return void res.end();
      res.write(`data: ${JSON.stringify({ type: 'fake.tick', properties: { n: i, at: Date.now() } })}\n\n`);
      i++;
      setTimeout(tick, interval);
    };
    tick();
    return;
  }
  if (req.method === 'POST' && p === '/fake/model') {
    const body = await readBody(req);
    const cfg = parse(process.env.OPENCODE_CONFIG_CONTENT ?? '') as { provider?: { svc?: { options?: { baseURL?: string; apiKey?: string } } } } | undefined;
    const o = cfg?.provider?.svc?.options;
    if (!o?.baseURL) return json(res, 200, { status: null, body: 'no svc provider' });
    const r = await fetch(`${o.baseURL}/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${o.apiKey}` }, body, signal: AbortSignal.timeout(20_000) });
    return json(res, 200, { status: r.status, body: await r.text() });
  }
  if (p === '/fake/state') {
    return json(res, 200, {
      pid: process.pid,
      argv: process.argv.slice(2),
      cwd: process.cwd(),
      env: process.env,
      sessions: [...sessions.values()],
      prompts,
    });
  }
  if (p === '/fake/echo') {
    const body = await readBody(req);
    return json(res, 200, { method: req.method, url: req.url, headers: req.headers, body });
  }
  if (req.method === 'POST' && p === '/fake/crash') {
    json(res, 200, { crashing: true });
    setTimeout(() => process.exit(3), 20);
    return;
  }
  json(res, 404, { error: 'not found', path: p });
}

const server = http.createServer((req, res) => {
  handle(req, res).catch((err: unknown) => json(res, 500, { error: String(err) }));
});
const wss = new WebSocketServer({ noServer: true });
server.on('upgrade', (req, socket, head) => {
  wss.handleUpgrade(req, socket, head, (ws) => {
    ws.send(JSON.stringify({ hello: req.url, cookie: req.headers.cookie ?? null, context: req.headers['x-svc-user-context'] ?? null }));
    ws.on('message', (data, isBinary) => ws.send(data, { binary: isBinary }));
  });
});

setTimeout(() => {
  server.listen(port, hostname, () => process.stdout.write(`fake runtime listening on ${hostname}:${port}\n`));
}, bootDelay);

if (process.env.FAKE_RUNTIME_IGNORE_TERM === '1') process.on('SIGTERM', () => process.stdout.write('ignoring SIGTERM\n'));

// Never outlive the parent that started us (a test or a daemon killed with SIGKILL).
const parent = process.ppid;
setInterval(() => {
  if (process.ppid !== parent) process.exit(0);
}, 500).unref();
