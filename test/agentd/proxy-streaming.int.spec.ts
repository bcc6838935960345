import { expect } from 'chai';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { LoopbackProxy } from '../../agentd/proxy.js';
import { silentLogger } from '../../lib/logger.js';
import { measuredDownload } from './support/download.js';

/**
 * The proxy streams: an SSE event reaches the client before the upstream writes the next
 * one (the upstream waits for the client's acknowledgement, so a buffering proxy
 * deadlocks and the test fails), and a 100 MB download starts reaching the client long
 * before the upstream has finished writing it, with memory bounded throughout.
 */
describe('agentd proxy streaming (in process)', function () {
  this.timeout(60_000);
  let upstream: http.Server;
  let front: http.Server;
  let proxy: LoopbackProxy;
  let frontPort: number;
  const acks: (() => void)[] = [];
  const state = { upstreamEnded: false, upstreamBytes: 0 };
  const TOTAL = 100 * 1024 * 1024;

  before(async () => {
    upstream = http.createServer((req, res) => {
      if (req.url === '/sse') {
        res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
        let n = 0;
        const next = () => {
          res.write(`data: ${n}\n\n`);
          if (++n === 5) return res.end();
          acks.push(next); // the next event only after the client saw this one
        };
        next();
        return;
      }
      if (req.url === '/big') {
        state.upstreamEnded = false;
        state.upstreamBytes = 0;
        res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(TOTAL) });
        const chunk = Buffer.alloc(256 * 1024, 7);
        const pump = () => {
          while (state.upstreamBytes < TOTAL) {
            state.upstreamBytes += chunk.length;
            if (!res.write(chunk)) return void res.once('drain', pump);
          }
          res.end(() => (state.upstreamEnded = true));
        };
        pump();
        return;
      }
      res.writeHead(404).end();
    });
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
    const upPort = (upstream.address() as AddressInfo).port;
    proxy = new LoopbackProxy('control-token', silentLogger);
    front = http.createServer((req, res) => proxy.forward(req, res, { port: upPort, path: req.url!, cookiePath: '/', kind: 'port' }, undefined));
    await new Promise<void>((r) => front.listen(0, '127.0.0.1', r));
    frontPort = (front.address() as AddressInfo).port;
  });
  after(async () => {
    proxy.close();
    await new Promise((r) => front.close(r));
    await new Promise((r) => upstream.close(r));
  });

  it('passes SSE event by event: each arrives before the upstream writes the next', async () => {
    const seen: string[] = [];
    await new Promise<void>((resolve, reject) => {
      http
        .get({ host: '127.0.0.1', port: frontPort, path: '/sse' }, (res) => {
          expect(res.headers['content-type']).to.equal('text/event-stream');
          let buf = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => {
            buf += c;
            let i: number;
            while ((i = buf.indexOf('\n\n')) >= 0) {
              seen.push(buf.slice(0, i));
              buf = buf.slice(i + 2);
              acks.shift()?.(); // acknowledge: the upstream may write the next event
            }
          });
          res.on('end', resolve);
          res.on('error', reject);
        })
        .on('error', reject);
    });
    expect(seen).to.deep.equal(['data: 0', 'data: 1', 'data: 2', 'data: 3', 'data: 4']);
  });

  it('streams a 100 MB download: first bytes before the upstream is done, memory bounded, every byte delivered', async () => {
    let upstreamDoneAtFirstByte: boolean | undefined;
    let bytesWrittenAtFirstByte = 0;
    const { received, peak, headers } = await measuredDownload(frontPort, '/big', {}, () => {
      upstreamDoneAtFirstByte = state.upstreamEnded;
      bytesWrittenAtFirstByte = state.upstreamBytes;
    });
    expect(headers['content-length']).to.equal(String(TOTAL));
    expect(received).to.equal(TOTAL);
    expect(upstreamDoneAtFirstByte, 'the client had bytes before the upstream finished').to.equal(false);
    expect(bytesWrittenAtFirstByte, 'at most a few buffers were in flight at the first byte').to.be.below(TOTAL / 4);
    // Live buffers only (sampled after a collection): a proxy holding the body would pass 50 MB.
    expect(peak, 'buffers in memory stay below the body size').to.be.below(TOTAL * 0.5);
  });
});
