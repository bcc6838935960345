import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import net from 'node:net';
import { gzipSync } from 'node:zlib';
import { startTestServer, type TestServer } from '../../support/server.js';
import { client } from '../../support/http.js';
import { authedUrl, workDir, type WorkDir } from '../../support/git-client.js';

const basic = (token: string) => `Basic ${Buffer.from(`u:${token}`).toString('base64')}`;

/** git processes this process started and that are still running. */
function gitChildren(): string[] {
  try {
    return execFileSync('ps', ['-o', 'pid=,args=', '--ppid', String(process.pid)], { encoding: 'utf8' })
      .split('\n')
      .filter((l) => /\bgit\b/.test(l) && /pack/.test(l));
  } catch {
    return [];
  }
}

async function noGitLeft(): Promise<void> {
  for (let i = 0; i < 50 && gitChildren().length; i++) await new Promise((r) => setTimeout(r, 100));
  expect(gitChildren()).to.deep.equal([]);
}

describe('smart HTTP under bad input: 4xx, never a 500, never a hung process', function () {
  this.timeout(120_000);
  let srv: TestServer;
  let repo: string;
  let auth: Record<string, string>;
  let w: WorkDir;

  before(async () => {
    srv = await startTestServer({ env: { SVC_GIT_IDLE_TIMEOUT_SECONDS: '1', SVC_GIT_MAX_PUSH_BYTES: '65536' } });
    const made = await client(srv.url, srv.token).post('/v1/projects', { name: 'Fuzz', slug: 'fuzz' });
    repo = made.body.project.repo_url;
    auth = { authorization: basic(srv.token) };
    w = await workDir();
    await w.ok(['init', '-q', '-b', 'main']);
    await w.commit({ 'a.txt': 'a\n' }, 'seed');
    await w.ok(['push', '-q', authedUrl(repo, srv.token), 'main']);
  });
  after(async () => {
    await w?.cleanup();
    await srv?.stop();
  });

  const post = (service: string, body: Buffer | string, headers: Record<string, string> = {}) =>
    fetch(`${repo}/${service}`, { method: 'POST', headers: { ...auth, 'content-type': `application/x-${service}-request`, ...headers }, body });

  it('truncated and malformed pkt-lines', async () => {
    const bodies = ['', '00', '0032want ', 'zzzz', '0004', 'ffff' + 'a'.repeat(100), '0009done\n', '0032want ' + 'f'.repeat(40) + '\n', '0000', '0001'];
    for (const service of ['git-upload-pack', 'git-receive-pack']) {
      for (const b of bodies) {
        for (const headers of [{}, { 'git-protocol': 'version=2' }] as Record<string, string>[]) {
          const res = await post(service, b, headers);
          const text = await res.text();
          expect(res.status, `${service} ${JSON.stringify(b)} -> ${res.status} ${text.slice(0, 200)}`).to.be.oneOf([200, 400]);
        }
      }
    }
    await noGitLeft();
  });

  it('wrong service, method, content type and encoding', async () => {
    const cases: Array<[string, RequestInit, number]> = [
      [`${repo}/info/refs?service=git-frobnicate`, { headers: auth }, 400],
      [`${repo}/info/refs`, { headers: auth }, 400],
      [`${repo}/info/refs?service=--upload-pack=touch`, { headers: auth }, 400],
      [`${repo}/info/refs?service=git-upload-pack`, { method: 'POST', headers: auth }, 405],
      [`${repo}/git-upload-pack`, { headers: auth }, 405],
      [`${repo}/git-frobnicate`, { method: 'POST', headers: auth }, 404],
      [`${repo}/git-upload-pack`, { method: 'POST', headers: { ...auth, 'content-type': 'text/plain' }, body: '0000' }, 415],
      [`${repo}/git-upload-pack`, { method: 'POST', headers: { ...auth, 'content-type': 'application/x-git-upload-pack-request', 'content-encoding': 'br' }, body: '0000' }, 415],
      [`${repo}/git-upload-pack`, { method: 'POST', headers: { ...auth, 'content-type': 'application/x-git-upload-pack-request', 'content-encoding': 'gzip' }, body: 'not gzip' }, 400],
      [`${srv.url}/git/--help.git/info/refs?service=git-upload-pack`, { headers: auth }, 404],
      [`${srv.url}/git/..%2f..%2fetc.git/info/refs?service=git-upload-pack`, { headers: auth }, 404],
      [`${srv.url}/git/fuzz.git/objects/info/packs`, { headers: auth }, 404],
    ];
    for (const [url, init, status] of cases) {
      const res = await fetch(url, init);
      const body = await res.text();
      expect(res.status, `${url} ${init.method ?? 'GET'} -> ${body}`).to.equal(status);
      expect(JSON.parse(body)).to.have.property('error');
    }
    // A hostile Git-Protocol header never reaches git.
    const res = await fetch(`${repo}/info/refs?service=git-upload-pack`, { headers: { ...auth, 'git-protocol': 'version=2 --upload-pack=touch' } });
    expect(res.status).to.be.oneOf([200, 400]);
    await res.arrayBuffer();
    await noGitLeft();
  });

  it('huge bodies: garbage, a gzip bomb, a push over the limit', async () => {
    const garbage = randomBytes(80 * 1024 * 1024);
    for (const service of ['git-upload-pack', 'git-receive-pack']) {
      const res = await post(service, garbage).catch((e: Error) => e);
      if (res instanceof Error) expect(res.message).to.match(/fetch failed|socket|reset/i); // cut off mid-upload
      else expect(res.status).to.be.within(400, 499);
    }
    const bomb = gzipSync(Buffer.alloc(100 * 1024 * 1024, 'a'));
    const b = await post('git-receive-pack', bomb, { 'content-encoding': 'gzip' });
    expect(b.status).to.be.within(400, 499);
    // A real push larger than SVC_GIT_MAX_PUSH_BYTES (64 KiB here): git reports the 413.
    await w.ok(['checkout', '-q', '-b', 'big']);
    await w.commit({ 'big.bin': randomBytes(300 * 1024).toString('base64') }, 'big');
    const p = await w.run(['push', authedUrl(repo, srv.token), 'big']);
    expect(p.code).to.not.equal(0);
    expect(p.stderr).to.contain('413');
    await noGitLeft();
    expect((await fetch(`${srv.url}/healthz`)).status).to.equal(200);
  });

  it('a client that stalls mid-body is cut after the idle timeout, and git is gone', async () => {
    const u = new URL(`${repo}/git-receive-pack`);
    const reply = await new Promise<string>((resolve, reject) => {
      const sock = net.connect(Number(u.port), u.hostname, () => {
        sock.write(
          `POST ${u.pathname} HTTP/1.1\r\nHost: ${u.host}\r\nAuthorization: ${auth.authorization}\r\n` +
            `Content-Type: application/x-git-receive-pack-request\r\nContent-Length: 100000\r\n\r\n0094`,
        );
      });
      let data = '';
      sock.on('data', (d) => (data += d.toString()));
      sock.on('close', () => resolve(data));
      sock.on('error', reject);
      setTimeout(() => sock.destroy(), 10_000);
    });
    expect(reply).to.match(/^HTTP\/1.1 408/);
    await noGitLeft();
  });

  it('random requests: every answer is below 500', async () => {
    const paths = ['info/refs?service=git-upload-pack', 'info/refs?service=git-receive-pack', 'git-upload-pack', 'git-receive-pack', 'info/refs', 'HEAD'];
    for (let i = 0; i < 120; i++) {
      const path = paths[i % paths.length]!;
      const method = i % 3 === 0 ? 'GET' : 'POST';
      const service = path.includes('receive') ? 'git-receive-pack' : 'git-upload-pack';
      const headers: Record<string, string> = { ...(i % 7 ? auth : {}), 'content-type': `application/x-${service}-request` };
      if (i % 5 === 0) headers['git-protocol'] = 'version=2';
      const body = method === 'POST' ? randomBytes(i * 37 % 4096) : undefined;
      const res = await fetch(`${repo}/${path}`, { method, headers, ...(body ? { body } : {}) });
      await res.arrayBuffer();
      expect(res.status, `${method} ${path}`).to.be.below(500);
    }
    await noGitLeft();
  });
});
