import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { append } from '../../../infra/event-store.js';
import { withProject } from '../../support/server.js';
import { runSvc, sandbox } from '../../cli/helpers.js';
import { eventually } from '../../support/wait.js';

interface Hit {
  at: number;
  eventId: string;
  text: string;
  status: number;
}

/** A webhook receiver on 127.0.0.1 that answers 500 to the first `failFirst` posts. */
async function receiver(failFirst: number) {
  const hits: Hit[] = [];
  const waiters: (() => void)[] = [];
  let failures = 0;
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      const fail = failures < failFirst;
      if (fail) failures++;
      const status = fail ? 500 : 200;
      hits.push({ at: Date.now(), eventId: String(req.headers['x-svc-event-id']), text: (JSON.parse(body) as { text: string }).text, status });
      res.writeHead(status, { 'content-type': 'text/plain' }).end(fail ? 'nope' : 'ok');
      waiters.splice(0).forEach((w) => w());
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/services/T000/B000/secret`;
  return {
    url,
    hits,
    accepted: () => hits.filter((h) => h.status === 200),
    async until(cond: () => boolean, what: string, timeoutMs = 20_000) {
      const deadline = Date.now() + timeoutMs;
      while (!cond()) {
        const left = deadline - Date.now();
        if (left <= 0) throw new Error(`receiver: ${what}; got ${JSON.stringify(hits.map((h) => [h.status, h.text]))}`);
        await new Promise<void>((r) => {
          waiters.push(r);
          setTimeout(r, Math.min(left, 500));
        });
      }
    },
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

describe('channels: chat notifications from the event log', function () {
  this.timeout(60_000);

  it('posts CR opened/merged/closed and session running/failed; a webhook failing twice is retried with backoff and gets each event once; commands never wait', async () => {
    const rx = await receiver(2);
    try {
      await withProject({ slug: 'chat', env: { SVC_CHANNELS_ALLOW_HTTP: '1', SVC_PUBLIC_URL: 'https://svc.example.test' } }, async ({ srv, repo, api, base }) => {
        const added = await api.post('/v1/projects/chat/channels', { kind: 'slack', webhook_url: rx.url });
        expect(added.status, JSON.stringify(added.body)).to.equal(201);
        const channel = added.body.channel;
        expect(channel.webhook).to.equal(`${new URL(rx.url).origin}/…`);
        expect(JSON.stringify(added.body)).to.not.contain('secret');
        expect((await api.get('/v1/projects/chat/channels')).body.channels.map((c: { channel_id: string }) => c.channel_id)).to.deep.equal([channel.channel_id]);

        // The create answers while the webhook is still failing: delivery never blocks a command.
        await repo.commit('feat-a', { 'a.txt': 'a\n' });
        await repo.commit('feat-b', { 'b.txt': 'b\n' });
        const a = (await api.post(base, { title: 'Add <a>', head_ref: 'feat-a' })).body.change_request;
        expect(rx.accepted().length).to.equal(0);
        await rx.until(() => rx.accepted().length === 1, 'the opened event delivered');
        const first = rx.hits.slice(0, 3);
        expect(first.map((h) => h.status)).to.deep.equal([500, 500, 200]);
        expect(new Set(first.map((h) => h.eventId)).size, 'the same event retried').to.equal(1);
        const gaps = [first[1]!.at - first[0]!.at, first[2]!.at - first[1]!.at];
        expect(gaps[0]).to.be.greaterThanOrEqual(400);
        expect(gaps[1], 'backoff grows').to.be.greaterThan(gaps[0]!);
        expect(first[2]!.text).to.equal(`<https://svc.example.test/projects/${a.project_id}/change-requests/1|CR #1> opened in chat: Add &lt;a&gt; (feat-a → main)`);

        const b = (await api.post(base, { title: 'Second', head_ref: 'feat-b' })).body.change_request;
        expect((await api.post(`${base}/${a.number}/merge`, {})).status).to.equal(200);
        expect((await api.post(`${base}/${b.number}/close`, {})).status).to.equal(200);

        // Session events, appended as the sessions service does (stream `session-<id>`).
        const sessionId = randomUUID();
        const projectId = a.project_id as string;
        const appendSession = (version: number, type: string, data: object) =>
          append(srv.db.db, { streamId: `session-${sessionId}`, streamType: 'session', projectId, expectedVersion: version, events: [{ type, data }], metadata: { actor: srv.userId } });
        await appendSession(0, 'SessionCreated', { session_id: sessionId });
        await appendSession(1, 'SessionRunning', { sandbox_id: 'sb-1', at: new Date().toISOString() });
        await appendSession(2, 'SessionFailed', { error: { code: 'sandbox', message: 'out of memory' }, at: new Date().toISOString() });

        await rx.until(() => rx.accepted().length === 6, 'six events delivered');
        const texts = rx.accepted().map((h) => h.text);
        expect(texts.slice(1)).to.deep.equal([
          `<https://svc.example.test/projects/${projectId}/change-requests/2|CR #2> opened in chat: Second (feat-b → main)`,
          `<https://svc.example.test/projects/${projectId}/change-requests/1|CR #1> merged into main in chat: Add &lt;a&gt;`,
          `<https://svc.example.test/projects/${projectId}/change-requests/2|CR #2> closed in chat: Second`,
          `<https://svc.example.test/projects/${projectId}/sessions/${sessionId}|Session ${sessionId}> is running in chat`,
          `<https://svc.example.test/projects/${projectId}/sessions/${sessionId}|Session ${sessionId}> failed in chat: out of memory`,
        ]);
        const ids = rx.accepted().map((h) => h.eventId);
        expect(new Set(ids).size, 'each event accepted once').to.equal(ids.length);

        // A checkpoint that lags behind its deliveries (a crash between post and checkpoint)
        // re-reads the events: the record by event id keeps them from being posted again.
        await srv.db.db.run({ text: `UPDATE channels SET checkpoint_txid = '0', checkpoint_position = 0 WHERE channel_id = $1`, values: [channel.channel_id] });
        await repo.commit('feat-c', { 'c.txt': 'c\n' });
        await api.post(base, { title: 'Third', head_ref: 'feat-c' });
        await rx.until(() => rx.accepted().length === 7, 'the next event delivered');
        expect(rx.accepted()[6]!.text).to.contain('CR #3> opened');
        // The delivery is recorded just after the webhook answered.
        const listed = await eventually(
          async () => {
            const c = (await api.get('/v1/projects/chat/channels')).body.channels[0];
            return c.delivered_count >= 7 ? c : undefined;
          },
          'the seventh delivery recorded',
          { timeoutMs: 10_000, maxIntervalMs: 50 },
        );
        expect(listed.delivered_count).to.equal(7);
        expect(listed.last_error).to.equal(null);

        expect((await api.call('DELETE', `/v1/projects/chat/channels/${channel.channel_id}`)).status).to.equal(204);
        expect((await api.get('/v1/projects/chat/channels')).body.channels).to.deep.equal([]);
        expect((await api.call('DELETE', `/v1/projects/chat/channels/${channel.channel_id}`)).status).to.equal(404);
      });
    } finally {
      await rx.close();
    }
  });

  it('refuses http webhooks unless the operator allows them, and bad kinds; another account cannot see a channel', async () => {
    await withProject({ slug: 'strict' }, async ({ srv, api }) => {
      const http1 = await api.post('/v1/projects/strict/channels', { kind: 'slack', webhook_url: 'http://hooks.example.test/x' });
      expect(http1.status).to.equal(400);
      expect(http1.body.message).to.contain('https');
      expect((await api.post('/v1/projects/strict/channels', { kind: 'teams', webhook_url: 'https://x.example.test/' })).status).to.equal(400);
      expect((await api.post('/v1/projects/strict/channels', { kind: 'slack', webhook_url: 'not a url' })).status).to.equal(400);
      const ok = await api.post('/v1/projects/strict/channels', { kind: 'slack', webhook_url: 'https://hooks.slack.example.test/services/T/B/x' });
      expect(ok.status).to.equal(201);
      const other = await srv.newUser('other@example.test');
      const { client } = await import('../../support/http.js');
      const foreign = await client(srv.url, other.token).get(`/v1/projects/${ok.body.channel.project_id}/channels`);
      expect([403, 404]).to.include(foreign.status);
    });
  });

  it('svc channels add / ls / rm against a real server', async () => {
    const sb = await sandbox();
    try {
      await withProject({ slug: 'clichat' }, async ({ srv }) => {
        const env = { SVC_API_URL: `${srv.url}/v1`, SVC_CLI_TOKEN: srv.token, SVC_PROJECT_ID: 'clichat' };
        const run = (args: string[]) => runSvc(args, { configPath: sb.configPath, env, cwd: sb.dir });
        const add = await run(['channels', 'add', 'slack', '--webhook-url', 'https://hooks.slack.example.test/services/T/B/xyz']);
        expect(add.code, add.stderr).to.equal(0);
        const id = add.stdout.trim();
        expect(id).to.match(/^[0-9a-f-]{36}$/);
        expect(add.stderr).to.contain('Connected slack channel https://hooks.slack.example.test/…');
        const ls = await run(['channels', 'ls']);
        expect(ls.code).to.equal(0);
        expect(ls.stdout.split('\t').slice(0, 4)).to.deep.equal([id, 'slack', 'https://hooks.slack.example.test/…', '0']);
        const json = await run(['channels', 'ls', '--json']);
        expect(JSON.parse(json.stdout)[0].channel_id).to.equal(id);
        const usage = await run(['channels', 'add', 'slack']);
        expect(usage.code).to.equal(2);
        expect(usage.stderr.trim().split('\n')).to.deep.equal(['error: missing --webhook-url <url>']);
        const kind = await run(['channels', 'add', 'irc', '--webhook-url', 'https://x.example.test/']);
        expect(kind.code).to.equal(2);
        const rm = await run(['channels', 'rm', id]);
        expect(rm.code, rm.stderr).to.equal(0);
        const again = await run(['channels', 'rm', id]);
        expect(again.code).to.equal(1);
        expect(again.stderr.trim().split('\n').pop()).to.match(/^error: .*not found/i);
      });
    } finally {
      await sb.cleanup();
    }
  });
});
