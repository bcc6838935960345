import http from 'node:http';
import path from 'node:path';
import { expect } from 'chai';
import { distRoot, makeRemote, startDaemon, tempDir, type DaemonHandle } from './support/harness.js';

/**
 * Against the real runtime: `opencode serve` from the `opencode-ai` devDependency. No
 * model is reachable here, so this checks what needs none: boot through the daemon,
 * health through the proxy, the config dir reaching opencode, sessions created through
 * /svc/prompt, abort, and the event stream.
 */
describe('svc-agent with the real opencode runtime (e2e)', function () {
  this.timeout(120_000);
  const opencode = path.join(distRoot, '..', 'node_modules', '.bin', 'opencode');
  let t: ReturnType<typeof tempDir>;
  let d: DaemonHandle;

  before(async () => {
    t = tempDir();
    const remote = makeRemote(t.dir, {
      files: {
        'svc.toml': '[agent]\nconfig_dir = ".svc/agent"\n',
        '.svc/agent/agent/svc-reviewer.md': '---\ndescription: Reviews change requests\nmode: subagent\n---\nYou review.\n',
      },
    });
    d = await startDaemon({
      root: t.dir,
      env: {
        SVC_AGENT_RUNTIME: opencode,
        SVC_PROJECT_AUTO_CLONE: '1',
        SVC_REPO_URL: remote.url,
        SVC_BRANCH_NAME: remote.branch,
        OPENCODE_DISABLE_AUTOUPDATE: '1',
      },
    });
    await d.waitForAgent('running', 90_000);
  });
  after(async () => {
    await d?.stop();
    t?.cleanup();
  });

  const ctx = () => ({ 'x-svc-user-context': d.sign() });

  it('answers its health through the proxy', async () => {
    const r = await fetch(`${d.url}/global/health`, { headers: ctx() });
    expect(r.status).to.equal(200);
    const body = (await r.json()) as { healthy: boolean; version: string };
    expect(body.healthy).to.equal(true);
    expect(body.version).to.match(/^\d+\.\d+\.\d+/);
    expect((await fetch(`${d.url}/global/health`)).status).to.equal(401);
  });

  it('loads the agents of the config dir named in svc.toml', async () => {
    const r = await fetch(`${d.url}/agent`, { headers: ctx() });
    expect(r.status).to.equal(200);
    const agents = (await r.json()) as { name: string }[];
    expect(agents.map((a) => a.name)).to.include('svc-reviewer');
  });

  it('creates a session through /svc/prompt, in the workspace, and aborts it', async () => {
    const r = await d.control('/svc/prompt', { text: 'say hello' });
    expect(r.status, JSON.stringify(r.body)).to.equal(202);
    expect(r.body.created).to.equal(true);
    const id = r.body.session_id as string;
    expect(id).to.match(/^ses_/);
    const s = await fetch(`${d.url}/session/${id}`, { headers: ctx() });
    expect(s.status).to.equal(200);
    const session = (await s.json()) as { id: string; directory: string };
    expect(session.id).to.equal(id);
    expect(session.directory).to.equal(d.workspace);
    const a = await d.control('/svc/abort', { session_id: id });
    expect(a.body).to.deep.equal({ session_id: id, aborted: true, method: 'api' });
    expect((await d.control('/svc/prompt', { text: 'x', session_id: 'ses_doesnotexist' })).status).to.be.oneOf([404, 502]);
  });

  it('streams /event through the proxy', async () => {
    const first = await new Promise<{ type: string }>((resolve, reject) => {
      const req = http.get(`${d.url}/event`, { headers: ctx() }, (res) => {
        expect(res.headers['content-type']).to.match(/text\/event-stream/);
        let buf = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => {
          buf += c;
          const i = buf.indexOf('\n\n');
          if (i >= 0) {
            req.destroy();
            resolve(JSON.parse(buf.slice(0, i).replace(/^data: /, '')) as { type: string });
          }
        });
      });
      req.on('error', reject);
    });
    expect(first.type).to.equal('server.connected');
  });
});
