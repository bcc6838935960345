/**
 * Every JSON response a test server sends is checked against the OpenAPI document
 * (built from contracts/): the operation, the status it declares, and the body's schema
 * for that status (exact: an extra, missing or retyped field is a mismatch). The in-process
 * server (test/support/server.ts) is watched on its HTTP server, so requests from any
 * client count (the `client()` helper, raw fetch, the CLI, git); a server spawned by
 * `spawnTestServer` is watched the same way inside its process (contract-preload.ts) and
 * reports through a file; `client()` checks what it reads from any other server. A mismatch fails the test that caused it (the
 * root `afterEach` hook in test/support/fixtures.ts), naming the request and the problem.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import type http from 'node:http';
import { ErrorSchema } from '../../contracts/common.js';
import { contractProblems, operationFor } from './openapi-check.js';

const parseJson = (text: string): unknown => {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
};

/**
 * What is not checked, in one place, with why. Everything else that answers JSON must be
 * in the document.
 */
export const EXEMPT: ReadonlyArray<{ path: RegExp; method?: RegExp; why: string; errorsChecked?: boolean }> = [
  { path: /^\//, method: /^(OPTIONS|HEAD)$/, why: "Express's automatic answers: OPTIONS lists the allowed methods as text, HEAD has no body" },
  { path: /^\/git\//, why: "smart HTTP (git's own protocol) for managed repositories; git clients read it, not JSON clients. Its refusals are the server's own: a JSON error there must be the contract's error body", errorsChecked: true },
  { path: /^\/v1\/projects\/[^/]+\/sessions\/[^/]+\/agent(\/|$)/, why: "the agent proxy: the runtime's own responses (and its SSE event stream), passed through" },
  { path: /^\/v1\/projects\/[^/]+\/sessions\/[^/]+\/preview\/[^/]+(\/|$)/, why: "the preview proxy: whatever the session's app serves" },
  { path: /^\/v1\/projects\/[^/]+\/sessions\/[^/]+\/wip$/, method: /^GET$/, why: "a paused session's checkpoint for its new sandbox (docs/sessions.md, pause and resume): a binary frame (a git bundle and the runtime's files), not JSON; its refusals are the contract's error body", errorsChecked: true },
  { path: /^\/v1\/llm(\/|$)/, why: "the model gateway speaks OpenAI's shape (bodies and errors), not the contract's" },
  { path: /^\/v1\/openapi\.json$/, why: 'the document itself: its schema is OpenAPI 3.1, not one of ours' },
  { path: /^\/metrics$/, why: 'Prometheus text' },
  { path: /^\/v1\/projects\/[^/]+\/change-requests\/[^/]+\/checks\/[^/]+\/log$/, method: /^GET$/, why: "a check's log: text/plain (nosniff), the output of a program the CR's code controls. Its refusals are the contract's error body", errorsChecked: true },
  { path: /^\/(?!v1\/|v1$|healthz$|readyz$)/, why: "the dashboard: HTML pages, its forms and its live feed (SSE) for browsers; not the API (docs/dashboard.md)" },
];

/** Hosts under the tests' preview domain (docs/sessions.md "Previews"), answered before the API. */
const PREVIEW_HOST = /^[^:]+\.localhost(:\d+)?$/i;

const exemptionOf = (method: string, path: string) => EXEMPT.find((e) => e.path.test(path) && (!e.method || e.method.test(method.toUpperCase())));
export const exemptWhy = (method: string, path: string): string | null => exemptionOf(method, path)?.why ?? null;

const isJson = (contentType: string | undefined) => !!contentType && /^application\/([a-z.+-]*\+)?json\b/i.test(contentType);

/** Problems of one real response against the document; [] when it conforms or is exempt. */
export function responseProblems(r: { method: string; url: string; status: number; contentType?: string; body: string }): string[] {
  const path = r.url.replace(/[?#].*$/, '');
  const exempt = exemptionOf(r.method, path);
  if (exempt) {
    if (!exempt.errorsChecked || r.status < 400 || !isJson(r.contentType)) return [];
    const parsed = ErrorSchema.safeParse(parseJson(r.body));
    return parsed.success ? [] : [`${r.method} ${path} ${r.status}: not the contract's error body: ${parsed.error.message}`];
  }
  if (r.status === 101) return []; // a WebSocket upgrade: its messages are checked by the feed's own tests
  const json = isJson(r.contentType);
  if (!json) {
    // A body of another type on a documented route is drift too (the document says JSON).
    if (r.body === '' || r.status === 204 || r.status === 304 || r.method === 'HEAD') return [];
    return [`${r.method} ${path} ${r.status}: answered ${r.contentType ?? 'no content-type'}, not JSON`];
  }
  // A method or path the API does not have: refused before or instead of any route (401 of
  // the auth layer, 400/413 of the body parser, 404 of api/errors.ts notFoundHandler), always
  // a 4xx with the contract's error body; anything else there is an undocumented route.
  if (!operationFor(r.method, path)) {
    if (r.status < 400 || r.status >= 500) return [`${r.method} ${path} ${r.status}: no such operation in the OpenAPI document`];
    const parsed = ErrorSchema.safeParse(parseJson(r.body));
    return parsed.success ? [] : [`${r.method} ${path} ${r.status} (no such operation): not the contract's error body: ${parsed.error.message}`];
  }
  return contractProblems({ method: r.method, path, status: r.status, replyBody: r.body });
}

const violations = new Map<string, { body: string; times: number }>();

/** Where a spawned server (test/support/contract-preload.ts) sends its problems, instead of keeping them. */
let sink: ((problem: string, body: string) => void) | null = null;
export const sendViolationsTo = (fn: (problem: string, body: string) => void): void => {
  sink = fn;
};

/** Problem logs of spawned servers this process reads with its own (one JSON line per problem). */
const logs = new Set<string>();
export const collectFrom = (file: string): void => void logs.add(file);
export const stopCollecting = (file: string): void => void logs.delete(file);

function drainLogs(): void {
  for (const file of logs) {
    if (!existsSync(file)) continue;
    const text = readFileSync(file, 'utf8');
    if (!text) continue;
    writeFileSync(file, '');
    for (const line of text.split('\n').filter(Boolean)) {
      const { problem, body } = JSON.parse(line) as { problem: string; body: string };
      note(problem, body);
    }
  }
}

function note(problem: string, body: string): void {
  const seen = violations.get(problem);
  if (seen) seen.times++;
  else violations.set(problem, { body, times: 1 });
}

/** Problems seen since the last call, each once with the first body that showed it (the root afterEach hook fails the test with them). */
export function takeViolations(): string[] {
  drainLogs();
  const out = [...violations].map(([p, v]) => `${p}${v.times > 1 ? ` (${v.times} responses)` : ''}\n      body: ${v.body.length > 2000 ? `${v.body.slice(0, 2000)}...` : v.body}`);
  violations.clear();
  return out;
}

export function recordResponse(r: Parameters<typeof responseProblems>[0]): string[] {
  const problems = responseProblems(r);
  for (const p of problems) (sink ?? note)(p, r.body);
  return problems;
}

/** Ports of servers watched on their own side (in process, or spawned with the preload): `client()` leaves their responses to the watcher. */
const watchedPorts = new Set<number>();
export const markWatched = (port: number, watched = true): void => void (watched ? watchedPorts.add(port) : watchedPorts.delete(port));
export const isWatched = (base: string): boolean => {
  try {
    return watchedPorts.has(Number(new URL(base).port));
  } catch {
    return false;
  }
};

const MAX_CAPTURE = 8 * 1024 * 1024;

/**
 * Watches every response of `server`: prepended, so it wraps `write`/`end` before Express
 * sees the request. Exempt paths are not buffered (streams, proxies).
 */
export function watchResponses(server: http.Server): void {
  const addr = server.address();
  if (addr && typeof addr === 'object') watchedPorts.add(addr.port);
  server.once('close', () => {
    if (addr && typeof addr === 'object') watchedPorts.delete(addr.port);
  });
  server.prependListener('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
    const url = req.url ?? '/';
    // A preview's own origin (`*.localhost` here) is not the API: whatever the app serves, whatever the path.
    if (PREVIEW_HOST.test(req.headers.host ?? '')) return;
    const exempt = exemptionOf(req.method ?? 'GET', url.replace(/[?#].*$/, ''));
    if (exempt && !exempt.errorsChecked) return;
    // Streams whose errors are checked keep only a small head: an error body is small, a pack is not.
    const cap = exempt ? 64 * 1024 : MAX_CAPTURE;
    const chunks: Buffer[] = [];
    let size = 0;
    const keep = (chunk: unknown, encoding?: unknown) => {
      if (chunk === undefined || chunk === null || typeof chunk === 'function' || size > cap) return;
      const b = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as string, typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8');
      size += b.length;
      chunks.push(b);
    };
    // Headers given to writeHead (not setHeader) are not visible to getHeader afterwards.
    let headType: string | undefined;
    const writeHead = res.writeHead.bind(res) as (...a: unknown[]) => http.ServerResponse;
    res.writeHead = ((...a: unknown[]) => {
      const h = a.find((x, i) => i > 0 && x !== null && typeof x === 'object');
      if (Array.isArray(h)) {
        for (let i = 0; i + 1 < h.length; i += 2) if (String(h[i]).toLowerCase() === 'content-type') headType = String(h[i + 1]);
      } else if (h) {
        for (const [k, v] of Object.entries(h)) if (k.toLowerCase() === 'content-type') headType = String(v);
      }
      return writeHead(...a);
    }) as typeof res.writeHead;
    const write = res.write.bind(res) as (...a: unknown[]) => boolean;
    const end = res.end.bind(res) as (...a: unknown[]) => http.ServerResponse;
    res.write = ((...a: unknown[]) => {
      keep(a[0], a[1]);
      return write(...a);
    }) as typeof res.write;
    res.end = ((...a: unknown[]) => {
      keep(a[0], a[1]);
      return end(...a);
    }) as typeof res.end;
    res.once('finish', () => {
      if (size > cap) return;
      const ct = res.getHeader('content-type') ?? headType;
      recordResponse({ method: req.method ?? 'GET', url, status: res.statusCode, body: Buffer.concat(chunks).toString('utf8'), ...(ct !== undefined ? { contentType: String(ct) } : {}) });
    });
  });
}
