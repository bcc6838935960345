import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import type { LookupFunction } from 'node:net';
import { assertSha } from '../../domain/refs.js';
import { cleanEnv, runGit } from '../../lib/git-run.js';
import { step } from '../../lib/step-trace.js';

/**
 * A push over git's smart HTTP protocol (v0: gitprotocol-http, -pack, -common) from Node,
 * for a publish whose objects are already in the mirror: one GET of the receive-pack
 * advertisement (credentials sent at once), the leases checked against it exactly as
 * `git push --force-with-lease=<ref>:<expected>` checks them, one `git pack-objects`,
 * one POST with `report-status`. It replaces the four processes and the 401 round of a
 * `git push` and decides only what it can decide; everything else is `fallback` (nothing
 * was sent: the caller runs `git push`) or, once the POST has started, `unknown`.
 * No redirect is followed, connections go only to the addresses given (the policy's
 * checked ones), TLS checks the URL's host name.
 */

export interface HttpPushRequest {
  /** The repository's http(s) URL, without userinfo. */
  url: string;
  /** Sent as Basic auth on both requests; the caller decides whether they may be sent. */
  credentials: { username: string; password: string } | null;
  /** Connect only to these (empty: the system's resolution). */
  addresses: string[];
  timeoutMs: number;
  /** The bare repository holding every object of `next` (pack-objects runs there). */
  gitDir: string;
  /** Ref -> the value it must have on the server (null: absent), as `--force-with-lease`. */
  leases: ReadonlyArray<{ ref: string; expected: string | null }>;
  /** The ref moved: from its leased value to `next`. */
  update: { ref: string; next: string };
  /** Commits the server has (excluded from the pack; thin deltas may use them). */
  haves: readonly string[];
}

export type HttpPushOutcome =
  | { kind: 'pushed' }
  /** A lease did not hold: nothing was sent. */
  | { kind: 'stale' }
  /** The server refused the update, with its reason. */
  | { kind: 'rejected'; reason: string }
  /** The server refused us (401, 403, 404, a redirect) before anything was sent. */
  | { kind: 'denied'; status: number }
  /** Not pushed, nothing sent; `git push` may do better (no capability, a network error, another format). */
  | { kind: 'fallback'; why: string }
  /** The POST started and no report came back: the update may or may not have happened. */
  | { kind: 'unknown'; why: string };

const GIT_HTTP_ENV = /^(git_ssl_.*|git_curl.*|git_http_.*)$/i;

/**
 * Whether a push to `url` may be made here: http(s), and none of git's http variables
 * (GIT_SSL_*, GIT_CURL*, GIT_HTTP_*) in the environment git runs with. That one is
 * `cleanEnv()` (lib/git-run.ts), which drops them today, so `git push` never sees a
 * GIT_SSL_CAINFO of the parent either; Node's TLS checks certificates against its own
 * roots and any failure before the POST falls back to `git push`. Proxy variables play no
 * part: the server reaches repositories directly, never through an outbound proxy (the
 * URL policy judges, and pins, the address connected to; git runs without the parent's
 * proxy variables and with `http.proxy` emptied, ./remote-transport.ts), so this push and
 * `git push` connect to the same place.
 */
export function nodePushApplies(url: string, gitEnv: Record<string, string> = cleanEnv()): boolean {
  if (!/^https?:\/\//i.test(url)) return false;
  return !Object.keys(gitEnv).some((k) => GIT_HTTP_ENV.test(k) && gitEnv[k] !== undefined && gitEnv[k] !== '');
}

const MAX_ADVERTISEMENT = 32 << 20;
const MAX_PACK = 64 << 20;
const ZERO = '0'.repeat(40);

export async function httpPush(req: HttpPushRequest): Promise<HttpPushOutcome> {
  const next = assertSha(req.update.next);
  const lease = req.leases.find((l) => l.ref === req.update.ref);
  if (!lease) throw new Error('httpPush: the updated ref must be leased');
  const haves = req.haves.map((h) => assertSha(h));
  const base = new URL(req.url.replace(/\/+$/, ''));
  const client = new Client(base, req);
  // The pack does not depend on the answer (but for a server that takes no thin packs):
  // it is made while the GET is under way, and dropped if nothing is sent.
  const stdin = [next, ...haves.map((h) => `^${h}`)].join('\n') + '\n';
  const packOf = (thin: boolean) =>
    runGit(['pack-objects', '--stdout', '--revs', '--quiet', ...(thin ? ['--thin'] : [])], { cwd: req.gitDir, input: stdin, timeoutMs: req.timeoutMs, maxStdoutBytes: MAX_PACK });
  const thinPack = packOf(true);
  thinPack.catch(() => {}); // awaited below when used
  try {
    let adv: Advertisement;
    try {
      const res = await client.request('GET', '/info/refs?service=git-receive-pack', null, MAX_ADVERTISEMENT);
      if (res.status !== 200) return denialOr(res.status);
      if (res.contentType !== 'application/x-git-receive-pack-advertisement') return { kind: 'fallback', why: 'not a smart HTTP server' };
      adv = parseAdvertisement(res.body);
    } catch (err) {
      return { kind: 'fallback', why: `advertisement: ${(err as Error).message}` };
    }
    const format = [...adv.caps].find((c) => c.startsWith('object-format='));
    if (format !== undefined && format !== 'object-format=sha1') return { kind: 'fallback', why: format };
    if (!adv.caps.has('report-status')) return { kind: 'fallback', why: 'no report-status' };
    if (req.leases.length > 1 && !adv.caps.has('atomic')) return { kind: 'fallback', why: 'no atomic' };
    for (const l of req.leases) if ((adv.refs.get(l.ref) ?? null) !== l.expected) return { kind: 'stale' };
    step('git: push: info/refs');

    let pack: Awaited<typeof thinPack>;
    try {
      pack = adv.caps.has('no-thin') ? await packOf(false) : await thinPack;
    } catch (err) {
      return { kind: 'fallback', why: `pack-objects: ${(err as Error).message}` };
    }
    if (pack.truncated) return { kind: 'fallback', why: 'pack too large' };
    step('git: push: pack-objects');

    const caps = ['report-status', ...(req.leases.length > 1 ? ['atomic'] : []), ...([...adv.caps].some((c) => c.startsWith('agent=')) ? ['agent=svc'] : [])];
    const command = `${lease.expected ?? ZERO} ${next} ${req.update.ref}\0${caps.join(' ')}\n`;
    const body = Buffer.concat([pkt(command), FLUSH, pack.stdout]);
    let res: Response;
    try {
      res = await client.request('POST', '/git-receive-pack', body, 1 << 20);
    } catch (err) {
      return { kind: 'unknown', why: (err as Error).message };
    }
    if (res.status !== 200) return { kind: 'unknown', why: `POST answered ${res.status}` };
    const report = parseReport(res.body);
    const status = report?.refs.get(req.update.ref);
    if (!report || status === undefined) return { kind: 'unknown', why: 'no status for the ref' };
    if (status.ok && report.unpack === 'ok') return { kind: 'pushed' };
    if (status.ok) return { kind: 'unknown', why: `unpack ${report.unpack}` };
    return { kind: 'rejected', reason: status.reason.slice(0, 200) || 'no reason given' };
  } finally {
    client.close();
  }
}

/** What `git push` makes of these answers to its GET: it fails (exit 128) without sending anything. */
function denialOr(status: number): HttpPushOutcome {
  if (status === 401 || status === 403 || status === 404 || (status >= 300 && status < 400)) return { kind: 'denied', status };
  return { kind: 'fallback', why: `info/refs answered ${status}` };
}

interface Response {
  status: number;
  contentType: string;
  body: Buffer;
}

/** Two requests on one kept-alive connection, pinned, with a deadline for the whole push. */
class Client {
  private readonly agent: http.Agent;
  private readonly deadline: number;
  private readonly lookup: LookupFunction | undefined;

  constructor(
    private readonly base: URL,
    private readonly req: HttpPushRequest,
  ) {
    const tls = base.protocol === 'https:';
    this.agent = tls ? new https.Agent({ keepAlive: true, maxSockets: 1 }) : new http.Agent({ keepAlive: true, maxSockets: 1 });
    this.deadline = performance.now() + req.timeoutMs;
    const addrs = req.addresses;
    this.lookup =
      addrs.length === 0
        ? undefined
        : (_host, options, cb) => {
            const all = addrs.map((address) => ({ address, family: net.isIPv6(address) ? 6 : 4 }));
            if (options.all) (cb as (e: null, a: typeof all) => void)(null, all);
            else cb(null, all[0]!.address, all[0]!.family);
          };
  }

  request(method: 'GET' | 'POST', suffix: string, body: Buffer | null, maxBytes: number): Promise<Response> {
    const host = this.base.hostname.replace(/^\[|\]$/g, '');
    const headers: http.OutgoingHttpHeaders = { 'User-Agent': 'git/svc', Accept: '*/*', 'Accept-Encoding': 'identity' };
    const c = this.req.credentials;
    if (c) headers.Authorization = `Basic ${Buffer.from(`${c.username}:${c.password}`).toString('base64')}`;
    if (body) {
      headers['Content-Type'] = 'application/x-git-receive-pack-request';
      headers.Accept = 'application/x-git-receive-pack-result';
      headers['Content-Length'] = body.length;
    }
    const options: https.RequestOptions = {
      method,
      protocol: this.base.protocol,
      hostname: host,
      port: this.base.port || undefined,
      path: this.base.pathname + suffix,
      headers,
      agent: this.agent,
      lookup: this.lookup,
      ...(this.base.protocol === 'https:' && !net.isIP(host) ? { servername: host } : {}),
    };
    return new Promise<Response>((resolve, reject) => {
      const r = (this.base.protocol === 'https:' ? https : http).request(options, (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > maxBytes) r.destroy(new Error('answer too large'));
          else chunks.push(chunk);
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, contentType: String(res.headers['content-type'] ?? '').split(';')[0]!.trim(), body: Buffer.concat(chunks) }));
        res.on('aborted', () => reject(new Error('answer cut off')));
        res.on('error', reject);
      });
      const left = this.deadline - performance.now();
      const timer = setTimeout(() => r.destroy(new Error('timed out')), Math.max(left, 0));
      r.on('close', () => clearTimeout(timer));
      r.on('error', reject);
      r.end(body ?? undefined);
    });
  }

  close(): void {
    this.agent.destroy();
  }
}

const FLUSH = Buffer.from('0000');

function pkt(line: string): Buffer {
  const data = Buffer.from(line, 'utf8');
  return Buffer.concat([Buffer.from((data.length + 4).toString(16).padStart(4, '0')), data]);
}

/** pkt-lines up to the first flush; `rest` is where the reading stopped. Throws on a malformed line. */
function readPkts(buf: Buffer, from: number): { lines: string[]; rest: number; flushed: boolean } {
  const lines: string[] = [];
  let at = from;
  while (at + 4 <= buf.length) {
    const hex = buf.toString('latin1', at, at + 4);
    if (!/^[0-9a-f]{4}$/i.test(hex)) throw new Error('bad pkt-line length');
    const len = parseInt(hex, 16);
    if (len === 0) return { lines, rest: at + 4, flushed: true };
    if (len < 4 || at + len > buf.length) throw new Error('bad pkt-line');
    lines.push(buf.toString('utf8', at + 4, at + len).replace(/\n$/, ''));
    at += len;
  }
  return { lines, rest: at, flushed: false };
}

interface Advertisement {
  refs: Map<string, string>;
  caps: Set<string>;
}

/** `# service=git-receive-pack`, flush, then `<sha> <ref>` lines (capabilities after NUL on the first), flush. */
export function parseAdvertisement(buf: Buffer): Advertisement {
  const head = readPkts(buf, 0);
  if (head.lines[0] !== '# service=git-receive-pack' || !head.flushed) throw new Error('no service line');
  const body = readPkts(buf, head.rest);
  if (!body.flushed) throw new Error('advertisement cut off');
  const refs = new Map<string, string>();
  let caps = new Set<string>();
  body.lines.forEach((line, i) => {
    if (i === 0 && line === 'version 1') return;
    const nul = line.indexOf('\0');
    if (nul >= 0) {
      if (caps.size > 0) throw new Error('capabilities twice');
      caps = new Set(line.slice(nul + 1).split(' ').filter(Boolean));
      line = line.slice(0, nul);
    }
    const m = /^([0-9a-f]{40}) (\S+)$/.exec(line);
    if (!m) throw new Error('bad ref line');
    if (m[2] === 'capabilities^{}' || m[2] === '.have') return;
    refs.set(m[2]!, m[1]!);
  });
  return { refs, caps };
}

/** `unpack <ok|error>`, then `ok <ref>` / `ng <ref> <reason>` per command, flush. Null if it is not one. */
export function parseReport(buf: Buffer): { unpack: string; refs: Map<string, { ok: boolean; reason: string }> } | null {
  let r: ReturnType<typeof readPkts>;
  try {
    r = readPkts(buf, 0);
  } catch {
    return null;
  }
  if (!r.flushed || !r.lines[0]?.startsWith('unpack ')) return null;
  const refs = new Map<string, { ok: boolean; reason: string }>();
  for (const line of r.lines.slice(1)) {
    const m = /^(ok|ng) (\S+)(?: (.*))?$/.exec(line);
    if (!m) return null;
    refs.set(m[2]!, { ok: m[1] === 'ok', reason: m[3] ?? '' });
  }
  return { unpack: r.lines[0].slice('unpack '.length), refs };
}
