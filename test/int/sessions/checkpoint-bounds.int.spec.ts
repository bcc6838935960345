import { expect } from 'chai';
import path from 'node:path';
import { FRAME_MAGIC } from '../../../lib/checkpoint-frame.js';
import { pushBody } from '../../support/raw-body.js';
import { agentReady, waitForStatus, withSessionProject, type SessionProject } from '../../support/sessions.js';

/**
 * Checkpoints are streamed, one at a time per session, under their cap: a sandbox that sends
 * giant ones, many at once, gets refused (429 while one streams in, 413 over the cap, unread),
 * and the server's memory does not grow with what it sends.
 */
const MB = 1024 * 1024;
const WIP_CAP = 8 * MB; // SVC_SESSION_WIP_MAX_BYTES: the checkpoint cap is 2 x 8 MiB + 64 MiB = 80 MiB

async function running(p: SessionProject) {
  const created = await p.api.post(p.sessions, {});
  expect(created.status, JSON.stringify(created.body)).to.equal(201);
  const id = created.body.session.session_id as string;
  const one = `${p.sessions}/${id}`;
  const s = await waitForStatus(p.api, one, ['running', 'failed'], 60_000);
  expect(s.status, JSON.stringify(s.error)).to.equal('running');
  const state = await agentReady(p.api, `${one}/agent/fake/state`);
  const sandbox = s.sandbox.sandbox_id as string;
  return { id, key: state.body.env.SVC_TOKEN as string, socketPath: path.join(p.srv.dataDir, 'sandboxes', sandbox, 'gw', 'gateway.sock') };
}

/** A frame's head declaring a bundle of `bundleBytes` (its bytes follow as filler: not a bundle git accepts). */
const frameHead = (bundleBytes: number) =>
  Buffer.from(`${FRAME_MAGIC}${JSON.stringify({ wip_sha: 'a'.repeat(40), head_sha: null, skipped: [], runtime_version: null, bundle_bytes: bundleBytes, conversation_bytes: 0 })}\n`);

describe('sessions: giant checkpoints from one sandbox', function () {
  this.timeout(300_000);

  it('7 checkpoints of 40 MB at once: one streams in (to disk), six get 429 unread; over the cap 413 at the header, not a bundle 400 at its start; RSS stays bounded', () =>
    withSessionProject({ slug: 'ckpt', env: { SVC_SESSION_WIP_MAX_BYTES: String(WIP_CAP) } }, async (p) => {
      const s = await running(p);
      const put = (bytes: number, prefix: Buffer, chunked = false) =>
        pushBody({ socketPath: s.socketPath }, { method: 'PUT', path: `${p.sessions}/${s.id}/wip`, headers: { authorization: `Bearer ${s.key}`, 'content-type': 'application/vnd.svc.checkpoint' }, bytes, prefix, chunked });

      const peakBefore = process.resourceUsage().maxRSS * 1024;
      const rssBefore = process.memoryUsage().rss;
      const size = 40 * MB;
      // A bundle's head (what the server checks as it streams), then a pack git refuses.
      const bundleHead = Buffer.from(`# v2 git bundle\n${'a'.repeat(40)} refs/svc/wip\n\n`);
      const head = Buffer.concat([frameHead(size - frameHead(size).length), bundleHead]);
      const all = await Promise.all(Array.from({ length: 7 }, () => put(size, head)));
      const statuses = all.map((r) => r.status).sort();
      // The one that streamed in whole was read to its end, checked by git and refused: not a bundle.
      expect(statuses, all.map((r) => r.response.split('\r\n\r\n')[1]).join('\n')).to.deep.equal([400, 429, 429, 429, 429, 429, 429]);
      const read = all.find((r) => r.status === 400)!;
      expect(read.accepted).to.equal(size);
      expect(read.response).to.match(/not a valid git bundle|refused by git/);
      for (const r of all.filter((x) => x.status === 429)) {
        expect(r.response).to.match(/still being received/);
        expect(r.response).to.match(/\r\nconnection: close\r\n/i);
        expect(r.accepted, 'bytes a refused checkpoint got onto the socket').to.be.lessThan(16 * MB);
      }

      // Over the cap: refused at its Content-Length, or at its header when chunked, before the bundle is read.
      const declared = await put(200 * MB, frameHead(200 * MB - frameHead(200 * MB).length));
      expect(declared.status).to.equal(413);
      expect(declared.accepted).to.be.lessThan(16 * MB);
      const chunked = await put(200 * MB, frameHead(200 * MB), true);
      expect(chunked.status).to.equal(413);
      expect(chunked.accepted).to.be.lessThan(16 * MB);

      // Not a bundle: refused at its first bytes, the rest unread (git never reads it).
      const garbage = await put(size, frameHead(size - frameHead(size).length), true);
      expect(garbage.status).to.equal(400);
      expect(garbage.response).to.include('not a git bundle');
      expect(garbage.accepted).to.be.lessThan(16 * MB);

      // Buffered whole, 7 x 40 MB would have taken 280 MB; streamed, the peak hardly moves.
      const peakGrowth = process.resourceUsage().maxRSS * 1024 - peakBefore;
      expect(peakGrowth, `peak RSS growth (rss ${((process.memoryUsage().rss - rssBefore) / MB).toFixed(0)} MB)`).to.be.lessThan(150 * MB);

      // The session's checkpoints still work afterwards: a frame without a bundle is saved.
      const empty = Buffer.from(`${FRAME_MAGIC}${JSON.stringify({ wip_sha: null, head_sha: null, skipped: [], runtime_version: null, bundle_bytes: 0, conversation_bytes: 0 })}\n`);
      const ok = await put(empty.length, empty);
      expect(ok.status, ok.response).to.equal(200);
    }));
});
