import { expect } from 'chai';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadConfig } from '../../../infra/config.js';
import { loadKeyring, secretBox } from '../../../infra/secret-box.js';
import { outboundPolicy } from '../../../infra/net/outbound-policy.js';
import { silentLogger } from '../../../lib/logger.js';
import { addChannel } from '../../../services/channels/service.js';
import { startChannelDispatcher } from '../../../workers/channel-dispatcher.js';
import { withProject } from '../../support/server.js';
import { until } from '../../support/wait.js';

/**
 * Channel webhook URLs go through the one outbound URL policy,
 * when stored and again at every delivery (which connects to the address it checked).
 * Local networks are refused here (the test servers usually allow them).
 */
const STRICT = { SVC_REPO_ALLOW_LOCAL_NETWORKS: '0', SVC_CHANNELS_ALLOW_HTTP: '1', SVC_CHANNELS_DISPATCH: '0' };

async function receiver() {
  const hits: string[] = [];
  const server = http.createServer((req, res) => {
    hits.push(`${req.headers.host} ${req.url}`);
    req.resume();
    req.on('end', () => res.end('ok'));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return { hits, port: (server.address() as AddressInfo).port, close: () => new Promise<void>((r) => server.close(() => r())) };
}

describe('webhook URLs and the outbound URL policy', function () {
  this.timeout(60_000);

  it('a webhook to 127.0.0.1 (or any local, metadata or private address, in any spelling) is 400; a public host is accepted', () =>
    withProject({ slug: 'hooks', env: STRICT }, async ({ api }) => {
      const add = (webhook_url: string) => api.post('/v1/projects/hooks/channels', { kind: 'slack', webhook_url });
      for (const url of [
        'https://127.0.0.1:8443/hook',
        'http://127.0.0.1:9/hook',
        'http://[::1]/hook',
        'http://[::ffff:127.0.0.1]/hook',
        'http://2130706433/hook',
        'http://0x7f.1/hook',
        'http://169.254.169.254/latest/meta-data/',
        'http://10.0.0.7/hook',
        'http://192.168.1.1/hook',
        'http://localhost:9/hook',
      ]) {
        const r = await add(url);
        expect(r.status, url).to.equal(400);
        expect(r.body.rule, url).to.equal('local network');
        expect(r.body.issues[0].path).to.equal('webhook_url');
      }
      expect((await api.get('/v1/projects/hooks/channels')).body.channels).to.deep.equal([]);
      expect((await add('https://93.184.216.34/services/T/B/x')).status).to.equal(201);
    }));

  it('a name that turns into 127.0.0.1 after creation is refused at delivery; a delivery goes to the address that was checked', async () => {
    const rx = await receiver();
    try {
      await withProject({ slug: 'rebind', env: STRICT }, async ({ srv, repo, api, base }) => {
        const config = loadConfig({ SVC_DATA_DIR: srv.dataDir, ...STRICT });
        const secrets = secretBox(await loadKeyring({ dataDir: srv.dataDir }));
        const projectId = (await api.get('/v1/projects/rebind')).body.project.project_id as string;
        const hook = `http://hooks.rebind.test:${rx.port}/services/T/B/x`;
        // At creation the name is public.
        const publicDns = async () => ['93.184.216.34'];
        const channel = await addChannel({ db: srv.db.db, secrets, allowHttp: true, policy: outboundPolicy(config, publicDns) }, projectId, srv.userId, { kind: 'slack', webhook_url: hook });
        await repo.commit('topic', { 'a.txt': 'a\n' });
        expect((await api.post(base, { title: 'Ping', head_ref: 'topic' })).status).to.equal(201);

        // Then it rebinds to loopback: the delivery is refused before any connection.
        const lookups: string[] = [];
        const rebound = async (host: string) => (lookups.push(host), ['127.0.0.1']);
        const d1 = startChannelDispatcher({ db: srv.db.db, secrets, logger: silentLogger, policy: outboundPolicy(config, rebound), allowHttp: true, pollMs: 60_000 });
        const lastError = async () =>
          (await srv.db.db.one<{ last_error: string | null }>({ text: 'SELECT last_error FROM channels WHERE channel_id = $1', values: [channel.channel_id] }))!.last_error;
        try {
          await until(async () => (await d1.tick(), (await lastError()) !== null), 'the refused delivery recorded');
        } finally {
          await d1.stop();
        }
        expect(lookups).to.include('hooks.rebind.test');
        expect(await lastError()).to.contain('refused by the URL policy').and.contain('127.0.0.1');
        expect(rx.hits, 'nothing reached the loopback receiver').to.deep.equal([]);

        // Control: where local networks are allowed, the same delivery connects to the
        // address the policy resolved (the name itself resolves nowhere on this machine).
        const lenient = loadConfig({ SVC_DATA_DIR: srv.dataDir, ...STRICT, SVC_REPO_ALLOW_LOCAL_NETWORKS: '1' });
        const d2 = startChannelDispatcher({ db: srv.db.db, secrets, logger: silentLogger, policy: outboundPolicy(lenient, rebound), allowHttp: true, pollMs: 60_000 });
        try {
          await until(async () => (await d2.tick(), rx.hits.length > 0), 'the delivery to the checked address');
        } finally {
          await d2.stop();
        }
        expect(rx.hits).to.deep.equal([`hooks.rebind.test:${rx.port} /services/T/B/x`]);
      });
    } finally {
      await rx.close();
    }
  });
});
