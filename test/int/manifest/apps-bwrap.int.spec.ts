import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { expect } from 'chai';
import { probeBwrap } from '../../../infra/sandbox/bwrap.js';
import { withProject } from '../../support/server.js';
import { eventually, mergeChange, projectPath } from './support.js';
import { skipUnlessCi } from '../../support/skip.js';
import { hostRequest } from '../../support/preview-app.js';
import { sandboxFetch } from '../../../lib/sandbox-dial.js';

// The app reports what it can see: its secret, its working directory, and whether a file
// of the server's data dir (its path given in PROBE) is readable from inside the sandbox.
const SERVER_JS = `const http = require('node:http');
const fs = require('node:fs');
http.createServer((req, res) => {
  if (req.url === '/healthz') return res.end('ok');
  let probe;
  try { probe = 'read:' + fs.readFileSync(process.env.PROBE, 'utf8'); } catch (e) { probe = 'denied:' + e.code; }
  res.end([process.env.GREETING, process.cwd(), probe].join('|'));
}).listen(Number(process.env.PORT), '127.0.0.1');
`;

describe('apps under the bwrap provider', function () {
  this.timeout(120_000);

  before(function () {
    const probe = probeBwrap();
    if (!probe.ok) skipUnlessCi(this, `bubblewrap cannot run here: ${probe.reason}`);
  });

  it("runs the app in a bwrap sandbox: it gets the project's secrets, runs in /workspace and cannot read the server's data dir", () =>
    withProject({ slug: 'apps-bwrap', env: { SVC_SCHEDULER: '0', SVC_APP_HEALTH_TIMEOUT_MS: '20000', SVC_SANDBOX_PROVIDER: 'bwrap' } }, async (p) => {
      const pp = projectPath(p);
      const probe = path.join(p.srv.dataDir, 'probe.txt');
      await writeFile(probe, 'server-only');
      expect((await p.api.call('PUT', `${pp}/secrets/GREETING`, { value: 'hello' })).status).to.equal(204);
      const manifest = `[[apps]]\nname = "web"\ncommand = "node server.js"\nport = 3000\nhealth_path = "/healthz"\npublic = true\nenv = { PROBE = "${probe}" }\n`;
      const sha = await mergeChange(p, 'app', { 'server.js': SERVER_JS, 'svc.toml': manifest });
      const live = await eventually(async () => {
        const a = (await p.api.get(`${pp}/apps/web`)).body.app;
        return a?.status === 'live' && a.commit_sha === sha ? a : a?.status === 'failed' ? Promise.reject(new Error(a.last_error)) : null;
      }, 'the app live', 60_000);
      const served = await hostRequest(p.srv.url, new URL(live.url).host, '/');
      expect(served.body).to.equal('hello|/workspace|denied:ENOENT');
      const row = await p.srv.db.db.one<{ sandbox: { provider: string }; target: string }>({ text: "SELECT sandbox, target FROM apps WHERE name = 'web'", values: [] });
      expect(row?.sandbox.provider).to.equal('bwrap');
      // Reached through its socket only: no port of this host serves it.
      expect(row?.target).to.match(/^unix:\//);

      await mergeChange(p, 'no-apps', { 'svc.toml': '' });
      await eventually(async () => (await p.api.get(`${pp}/apps/web`)).body.app.status === 'removed', 'removal');
      await eventually(async () => {
        try {
          await sandboxFetch(row!.target, '/', { signal: AbortSignal.timeout(1000) });
          return false;
        } catch {
          return true;
        }
      }, 'the removed app to stop');
      expect((await hostRequest(p.srv.url, new URL(live.url).host, '/')).status).to.equal(404);
    }));
});
