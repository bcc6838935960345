import { expect } from 'chai';
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { HeadError, headEnd, parseRequestHead, type RequestHead } from '../../agentd/raw-proxy/head.js';

/**
 * The raw proxy parses request heads itself, in front of upstreams that parse them again
 * (most with llhttp, Node's parser). Where the two disagree on where a request ends or what
 * it says, a request can be smuggled past the proxy's checks. So every head a seeded fuzzer
 * makes is given to both: whatever llhttp refuses, the raw parser must refuse too, and
 * whatever both accept must read the same (method, target, version, every header in order,
 * and the body's framing). The raw parser may be stricter (it refuses what it need not
 * carry); the count is reported.
 */

/** What llhttp (a Node http server with default, strict settings) made of a head. */
type Verdict = { ok: false } | { ok: true; method: string; url: string; minor: number; names: string[]; values: string[]; chunked: boolean; length: number | null };

function llhttpParser(): Promise<{ parse(bytes: Buffer): Promise<Verdict>; close(): Promise<void> }> {
  const record = (req: http.IncomingMessage) => {
    const raw = req.rawHeaders;
    const names: string[] = [];
    const values: string[] = [];
    for (let i = 0; i < raw.length; i += 2) {
      names.push(raw[i]!.toLowerCase());
      values.push(raw[i + 1]!);
    }
    const te = req.headers['transfer-encoding'];
    const cl = req.headers['content-length'];
    const verdict: Verdict = { ok: true, method: req.method!, url: req.url!, minor: req.httpVersionMinor, names, values, chunked: te !== undefined, length: cl === undefined ? null : Number(cl) };
    // Written raw on the socket (no response framing): the client reads the verdict back.
    req.socket.end(JSON.stringify(verdict));
  };
  // Only the parser is compared: Node's own policy on top of it (a required Host) is off.
  const server = http.createServer({ requireHostHeader: false }, record);
  // Upgrades and CONNECT are parsed the same way, then given to these events instead.
  server.on('upgrade', record);
  server.on('connect', record);
  server.on('clientError', (_err, socket) => socket.destroy());
  server.on('connection', (s) => s.on('error', () => undefined));
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      resolve({
        parse: (bytes) =>
          new Promise((done) => {
            const c = net.connect(port, '127.0.0.1', () => c.write(bytes));
            let out = '';
            c.on('data', (d: Buffer) => (out += d.toString('latin1')));
            c.on('error', () => undefined);
            // llhttp still waiting for more after a whole head: it has not accepted it.
            c.setTimeout(2_000, () => c.destroy());
            c.on('close', () => done(out.startsWith('{') ? (JSON.parse(Buffer.from(out, 'latin1').toString('utf8')) as Verdict) : { ok: false }));
          }),
        close: () => new Promise((r) => server.close(() => r())),
      });
    });
  });
}

/** A small deterministic PRNG (mulberry32): the same cases on every run. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const SEEDS = [
  'GET / HTTP/1.1\r\nHost: x\r\n\r\n',
  'GET /proxy/3000/a?b=c HTTP/1.1\r\nHost: sandbox\r\nX-Svc-User-Context: a.b.c\r\nCookie: k=v\r\n\r\n',
  'POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\n',
  'POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n',
  'PUT /a HTTP/1.0\r\nHost: x\r\nContent-Length: 0\r\nConnection: keep-alive\r\n\r\n',
  'GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n',
];
/** Pieces that framing and smuggling attacks are made of. */
const PIECES = ['\r', '\n', '\r\n', '\0', ' ', '\t', ':', ',', ';', '\x7f', '\x80', '\xff', '-', '0', '1', '9', 'chunked', 'Content-Length: 5\r\n', 'Transfer-Encoding: chunked\r\n', 'Transfer-Encoding: identity\r\n', ' chunked', 'HTTP/1.1', '/', '?', '#', '%', 'x', 'A'];

function mutate(seed: string, next: () => number): string {
  let s = seed;
  const edits = 1 + Math.floor(next() * 3);
  for (let k = 0; k < edits; k++) {
    // Edits stay inside the head: the final CRLFCRLF is kept so both sides see a whole head.
    const body = s.slice(0, -4);
    const at = Math.floor(next() * (body.length + 1));
    const r = next();
    let out: string;
    if (r < 0.45) out = body.slice(0, at) + PIECES[Math.floor(next() * PIECES.length)]! + body.slice(at);
    else if (r < 0.65) out = body.slice(0, at) + body.slice(at + 1 + Math.floor(next() * 3));
    else if (r < 0.8) {
      // Repeat a header line.
      const lines = body.split('\r\n');
      const i = 1 + Math.floor(next() * Math.max(1, lines.length - 1));
      if (lines[i] !== undefined) lines.splice(i, 0, lines[i]!);
      out = lines.join('\r\n');
    } else if (r < 0.9) out = body.slice(0, at) + body.charAt(at).toUpperCase() + body.slice(at + 1);
    else out = body.slice(0, at) + String.fromCharCode(Math.floor(next() * 256)) + body.slice(at);
    s = out + '\r\n\r\n';
  }
  return s;
}

function raw(text: string): RequestHead | 'refused' | 'incomplete' {
  const buf = Buffer.from(text, 'latin1');
  try {
    const end = headEnd(buf, 0);
    if (end < 0) return 'incomplete';
    return parseRequestHead(buf, 0, end);
  } catch (err) {
    if (err instanceof HeadError) return 'refused';
    throw err;
  }
}

describe('agentd raw proxy: request heads against llhttp (differential)', function () {
  this.timeout(120_000);
  let llhttp: Awaited<ReturnType<typeof llhttpParser>>;
  before(async () => {
    llhttp = await llhttpParser();
  });
  after(() => llhttp.close());

  it('refuses whatever llhttp refuses, and reads the same request wherever both accept (3,000 seeded heads)', async () => {
    const next = rng(0x5eed);
    const disagreements: string[] = [];
    let bothAccept = 0;
    let stricter = 0;
    for (let i = 0; i < 3_000; i++) {
      const seed = SEEDS[i % SEEDS.length]!;
      const text = i < SEEDS.length ? seed : mutate(seed, next);
      const mine = raw(text);
      const theirs = await llhttp.parse(Buffer.from(text, 'latin1'));
      // A head whose end the raw parser cannot find is one it never forwards.
      if (mine === 'refused' || mine === 'incomplete') {
        if (theirs.ok) stricter++;
        continue;
      }
      if (!theirs.ok) {
        disagreements.push(`raw accepted, llhttp refused: ${JSON.stringify(text)}`);
        continue;
      }
      bothAccept++;
      const same =
        mine.method === theirs.method &&
        mine.target === theirs.url &&
        mine.minor === theirs.minor &&
        JSON.stringify(mine.names) === JSON.stringify(theirs.names) &&
        JSON.stringify(mine.values) === JSON.stringify(theirs.values) &&
        (mine.framing.kind === 'chunked') === theirs.chunked &&
        (mine.framing.kind === 'length' ? mine.framing.length : mine.framing.kind === 'none' && theirs.length === 0 ? 0 : null) === (theirs.chunked ? null : theirs.length);
      if (!same) disagreements.push(`read differently: ${JSON.stringify(text)}: raw ${JSON.stringify(mine)} llhttp ${JSON.stringify(theirs)}`);
    }
    console.log(`      both accepted ${bothAccept}, raw stricter on ${stricter}, of 3,000`);
    expect(disagreements.slice(0, 40), `${disagreements.length} disagreements`).to.deep.equal([]);
    expect(bothAccept, 'the fuzzer reaches accepted heads too').to.be.greaterThan(200);
  });
});
