import { expect } from 'chai';
import { ConfigError, loadConfig } from '../../../infra/config.js';
import { repoUrlOf } from '../../../services/sessions/sandbox-env.js';
import type { SessionDeps } from '../../../services/sessions/deps.js';
import type { ProjectRecord } from '../../../domain/project.js';
import { startTestServer, type TestServer } from '../../support/server.js';
import { requestFrom } from '../../support/http.js';

/**
 * Without SVC_PUBLIC_URL the creating request's Host became a managed
 * repository's URL, to which sandboxes then sent their clone credentials. Managed repo URLs
 * now come from SVC_PUBLIC_URL or SVC_PUBLIC_HOSTS (else the socket's own address), never
 * from the Host header.
 */
describe('managed repository URLs never come from the Host header', function () {
  this.timeout(60_000);

  const create = (srv: TestServer, slug: string, host: string) =>
    requestFrom('127.0.0.1', `${srv.url}/v1/projects`, {
      method: 'POST',
      headers: { host, authorization: `Bearer ${srv.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: slug, slug }),
    }).then((r) => {
      expect(r.status, r.text).to.equal(201);
      return (JSON.parse(r.text) as { project: { repo_url: string } }).project.repo_url;
    });

  it('with neither set: the address the connection reached, whatever Host says', async () => {
    const srv = await startTestServer();
    try {
      expect(await create(srv, 'hosted', 'evil.example')).to.equal(`${srv.url}/git/hosted.git`);
      expect(await create(srv, 'hosted2', 'evil.example:8443')).to.equal(`${srv.url}/git/hosted2.git`);
    } finally {
      await srv.stop();
    }
  });

  it('with SVC_PUBLIC_HOSTS: the listed origin the request named, else the first; never an unlisted Host', async () => {
    const srv = await startTestServer({ env: { SVC_PUBLIC_HOSTS: 'https://svc.example.com, https://alt.example.com:8443' } });
    try {
      expect(await create(srv, 'listed', 'alt.example.com:8443')).to.equal('https://alt.example.com:8443/git/listed.git');
      expect(await create(srv, 'listed2', 'SVC.example.com')).to.equal('https://svc.example.com/git/listed2.git');
      expect(await create(srv, 'unlisted', 'evil.example')).to.equal('https://svc.example.com/git/unlisted.git');
    } finally {
      await srv.stop();
    }
  });

  it('with SVC_PUBLIC_URL: that, always', async () => {
    const srv = await startTestServer({ env: { SVC_PUBLIC_URL: 'https://public.example.com/', SVC_PUBLIC_HOSTS: 'https://svc.example.com' } });
    try {
      expect(await create(srv, 'pub', 'svc.example.com')).to.equal('https://public.example.com/git/pub.git');
    } finally {
      await srv.stop();
    }
  });

  it('a sandbox clones a managed repository from the server as sandboxes reach it, even when the stored repo_url was poisoned before this fix', () => {
    const deps = { apiUrl: () => 'http://127.0.0.1:8080/v1' } as unknown as SessionDeps;
    const project = { project_id: '11111111-1111-4111-8111-111111111111', repo_managed: true, repo_url: 'http://evil.example/git/x.git' } as unknown as ProjectRecord;
    expect(repoUrlOf(deps, project)).to.equal('http://127.0.0.1:8080/git/11111111-1111-4111-8111-111111111111.git');
    const remote = { ...project, repo_managed: false, repo_url: 'https://github.com/o/r.git' } as unknown as ProjectRecord;
    // A remote and a file:// repository too: through the server (the relay; the file:// view), never their own URL.
    expect(repoUrlOf(deps, remote)).to.equal('http://127.0.0.1:8080/git/11111111-1111-4111-8111-111111111111.git');
    const local = { ...project, repo_managed: false, repo_url: 'file:///srv/repos/r.git' } as unknown as ProjectRecord;
    expect(repoUrlOf(deps, local)).to.equal('http://127.0.0.1:8080/git/11111111-1111-4111-8111-111111111111.git');
  });

  it('SVC_PUBLIC_HOSTS holds origins only', () => {
    expect(() => loadConfig({ SVC_PUBLIC_HOSTS: 'https://a.example, http://localhost:8080/' })).not.to.throw();
    for (const v of ['a.example', 'https://a.example/path', 'ftp://a.example', 'https://user@a.example']) {
      expect(() => loadConfig({ SVC_PUBLIC_HOSTS: v }), v).to.throw(ConfigError, /SVC_PUBLIC_HOSTS/);
    }
  });
});
