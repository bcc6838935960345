import { expect } from 'chai';
import { ChunkedTracker } from '../../agentd/raw-proxy/chunked.js';
import { HeadError, headEnd, MAX_HEAD_BYTES, parseRequestHead, parseResponseHead } from '../../agentd/raw-proxy/head.js';

const b = (s: string) => Buffer.from(s, 'latin1');
function request(text: string) {
  const buf = b(text);
  const end = headEnd(buf, 0);
  if (end < 0) return 'incomplete';
  return parseRequestHead(buf, 0, end);
}
const refused = (text: string): boolean => {
  try {
    request(text);
    return false;
  } catch (err) {
    return err instanceof HeadError;
  }
};

describe('agentd raw proxy: request heads', () => {
  it('parses the request line, headers (lower-cased names, trimmed values) and framing', () => {
    const h = request('POST /a?b=1 HTTP/1.1\r\nHost: x\r\nContent-Length:  12 \r\nX-A: caf\xe9\r\n\r\nbody');
    expect(h).to.not.equal('incomplete');
    if (h === 'incomplete') return;
    expect(h).to.deep.include({ method: 'POST', target: '/a?b=1', minor: 1, names: ['host', 'content-length', 'x-a'], values: ['x', '12', 'caf\xe9'] });
    expect(h.framing).to.deep.equal({ kind: 'length', length: 12 });
    expect(h.size).to.equal(Buffer.byteLength('POST /a?b=1 HTTP/1.1\r\nHost: x\r\nContent-Length:  12 \r\nX-A: caf\xe9\r\n\r\n', 'latin1'));
    expect((request('GET / HTTP/1.1\r\nTransfer-Encoding: Chunked\r\n\r\n') as { framing: unknown }).framing).to.deep.equal({ kind: 'chunked' });
    expect((request('GET / HTTP/1.1\r\nContent-Length: 0\r\n\r\n') as { framing: unknown }).framing).to.deep.equal({ kind: 'none' });
    expect(request('GET / HTTP/1.1\r\nHost: x\r\n')).to.equal('incomplete');
  });

  const attacks: [string, string][] = [
    ['Content-Length and Transfer-Encoding', 'POST / HTTP/1.1\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n'],
    ['two Content-Lengths', 'POST / HTTP/1.1\r\nContent-Length: 4\r\nContent-Length: 4\r\n\r\n'],
    ['a negative Content-Length', 'POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n'],
    ['a huge Content-Length', 'POST / HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n'],
    ['a Content-Length list', 'POST / HTTP/1.1\r\nContent-Length: 4, 4\r\n\r\n'],
    ['a transfer coding other than chunked', 'POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n'],
    ['two Transfer-Encodings', 'POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n'],
    ['obs-fold', 'GET / HTTP/1.1\r\nX-A: 1\r\n  folded\r\n\r\n'],
    ['whitespace before the colon', 'GET / HTTP/1.1\r\nContent-Length : 4\r\n\r\n'],
    ['a bare LF', 'GET / HTTP/1.1\nHost: x\r\n\r\n'],
    ['a bare CR in a value', 'GET / HTTP/1.1\r\nX-A: a\rb\r\n\r\n'],
    ['a NUL in a value', 'GET / HTTP/1.1\r\nX-A: a\0b\r\n\r\n'],
    ['a malformed request line', 'GET  / HTTP/1.1\r\n\r\n'],
    ['an unknown version', 'GET / HTTP/2.0\r\n\r\n'],
    ['garbage', 'GARBAGE\r\n\r\n'],
    ['too many headers', `GET / HTTP/1.1\r\n${'X-A: 1\r\n'.repeat(200)}\r\n`],
    ['a head over the limit', `GET / HTTP/1.1\r\nX-A: ${'a'.repeat(MAX_HEAD_BYTES)}\r\n\r\n`],
    ['an endless head', `GET / HTTP/1.1\r\nX-A: ${'a'.repeat(MAX_HEAD_BYTES + 10)}`],
  ];
  for (const [name, text] of attacks) {
    it(`refuses ${name}`, () => expect(refused(text), JSON.stringify(text)).to.equal(true));
  }

  it('reads response heads: status, framing, close', () => {
    const r = (t: string) => parseResponseHead(b(t), 0, headEnd(b(t), 0));
    expect(r('HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n')).to.deep.include({ status: 200, close: false, framing: { kind: 'length', length: 5 } });
    expect(r('HTTP/1.1 200 OK\r\n\r\n').framing).to.deep.equal({ kind: 'close' });
    expect(r('HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\n').close).to.equal(true);
    expect(r('HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 1\r\n\r\n').close).to.equal(false);
    expect(r('HTTP/1.1 204 No Content\r\nConnection: Close\r\n\r\n')).to.deep.include({ status: 204, close: true });
    expect(r('HTTP/1.1 200\r\nTransfer-Encoding: chunked\r\n\r\n').framing).to.deep.equal({ kind: 'chunked' });
    expect(() => r('HTTP/1.1 2000 OK\r\n\r\n')).to.throw(HeadError);
  });
});

describe('agentd raw proxy: chunked bodies', () => {
  const body = b('5;name=v\r\nhello\r\n1a\r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\nX-Trailer: 1\r\n\r\n');
  const tail = b('GET /next HTTP/1.1\r\n\r\n');
  const whole = Buffer.concat([body, tail]);

  /** Where the body ends when `whole` arrives in these pieces (-1: never). */
  const endAcross = (cuts: number[]): number => {
    const t = new ChunkedTracker();
    let from = 0;
    for (const to of [...cuts, whole.length]) {
      const e = t.feed(whole.subarray(from, to), 0);
      if (e >= 0) return from + e;
      from = to;
    }
    return -1;
  };

  it('finds the end of the body at every split point, in two and in three pieces', () => {
    for (let i = 0; i <= whole.length; i++) {
      expect(endAcross([i]), `split at ${i}`).to.equal(body.length);
      for (let j = i; j <= whole.length; j++) expect(endAcross([i, j]), `split at ${i}, ${j}`).to.equal(body.length);
    }
  });

  it('also finds the end byte by byte, and from an offset', () => {
    const t = new ChunkedTracker();
    let end = -1;
    for (let i = 0; i < whole.length && end < 0; i++) if (t.feed(whole.subarray(i, i + 1), 0) >= 0) end = i + 1;
    expect(end).to.equal(body.length);
    expect(new ChunkedTracker().feed(Buffer.concat([tail, whole]), tail.length)).to.equal(tail.length + body.length);
  });

  const bad = ['zz\r\n', '-1\r\n', ' 5\r\n', '5 \r\nhello\r\n', '5\nhello\r\n', '5\r\nhelloX\r\n', '\r\n', '10000000000000\r\n', '0\r\nbad\x01trailer\r\n\r\n', '0\r\n\r\r'];
  for (const text of bad) {
    it(`refuses the chunked body ${JSON.stringify(text)}`, () => {
      expect(() => new ChunkedTracker().feed(b(text), 0)).to.throw(HeadError);
    });
  }
});
