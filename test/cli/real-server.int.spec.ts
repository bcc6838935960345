/**
 * The CLI's read and state commands in process against the real server (no stubs): the
 * same commands the nock specs drive, so a change to the API's shapes that the CLI
 * relies on fails here even where a hand-written fixture would still agree with the CLI.
 */
import { expect } from 'chai';
import { withProject } from '../support/server.js';
import { runSvc, sandbox } from './helpers.js';

describe('svc commands against the real server (in process)', function () {
  this.timeout(60_000);

  it('projects ls/info and cr ls/show/diff/close/reopen agree with the API', () =>
    withProject({ slug: 'cli-real' }, async ({ srv, repo, api, base }) => {
      const sb = await sandbox();
      try {
        const env = { SVC_API_URL: `${srv.url}/v1`, SVC_CLI_TOKEN: srv.token, SVC_PROJECT_ID: 'cli-real' };
        const run = (args: string[]) => runSvc(args, { configPath: sb.configPath, env, cwd: sb.dir });
        await repo.commit('feature', { 'hello.txt': 'hello\n' });
        const opened = (await api.post(base, { title: 'Say hello', head_ref: 'feature' })).body.change_request;

        const projects = await run(['projects', 'ls', '--json']);
        expect(projects.code, projects.stderr).to.equal(0);
        expect(JSON.parse(projects.stdout).map((p: { slug: string }) => p.slug)).to.deep.equal(['cli-real']);
        const info = await run(['projects', 'info', 'cli-real', '--json']);
        expect(info.code, info.stderr).to.equal(0);
        expect(JSON.parse(info.stdout)).to.include({ slug: 'cli-real', default_branch: 'main' });

        const ls = await run(['cr', 'ls', '--json']);
        expect(ls.code, ls.stderr).to.equal(0);
        expect(JSON.parse(ls.stdout)).to.deep.equal((await api.get(`${base}?status=open`)).body.change_requests);

        const show = await run(['cr', 'show', String(opened.number), '--json']);
        expect(show.code, show.stderr).to.equal(0);
        expect(JSON.stringify(JSON.parse(show.stdout))).to.contain(opened.cr_id);

        const diff = await run(['cr', 'diff', String(opened.number)]);
        expect(diff.code, diff.stderr).to.equal(0);
        expect(diff.stdout).to.contain('diff --git a/hello.txt b/hello.txt').and.contain('+hello');

        const closed = await run(['cr', 'close', String(opened.number)]);
        expect(closed.code, closed.stderr).to.equal(0);
        expect((await api.get(`${base}/${opened.number}`)).body.change_request.status).to.equal('closed');
        const reopened = await run(['cr', 'reopen', String(opened.number)]);
        expect(reopened.code, reopened.stderr).to.equal(0);
        expect((await api.get(`${base}/${opened.number}`)).body.change_request.status).to.equal('open');
      } finally {
        await sb.cleanup();
      }
    }));

  it('secrets set/unset; unsetting a name that is not set: exit 1, one error line, the revision unchanged', () =>
    withProject({ slug: 'cli-secrets' }, async ({ srv, api }) => {
      const sb = await sandbox();
      try {
        const env = { SVC_API_URL: `${srv.url}/v1`, SVC_CLI_TOKEN: srv.token, SVC_PROJECT_ID: 'cli-secrets' };
        const run = (args: string[]) => runSvc(args, { configPath: sb.configPath, env, cwd: sb.dir });
        const secrets = '/v1/projects/cli-secrets/secrets';
        expect((await api.call('PUT', `${secrets}/KEEP_ME`, { value: 'v' })).status).to.equal(204);
        const before = (await api.get(secrets)).body;
        expect(before.revision).to.equal(1);

        const missing = await run(['secrets', 'unset', 'NOT_THERE']);
        expect(missing.code).to.equal(1);
        expect(missing.stderr.split('\n').filter((l) => l.startsWith('error:'))).to.deep.equal(['error: Secret NOT_THERE not found. (HTTP 404)']);
        const mixed = await run(['secrets', 'unset', 'KEEP_ME', 'NOT_THERE']);
        expect(mixed.code).to.equal(1);
        expect((await api.get(secrets)).body).to.deep.equal(before);

        const gone = await run(['secrets', 'unset', 'KEEP_ME']);
        expect(gone.code, gone.stderr).to.equal(0);
        expect(gone.stderr).to.contain('Unset KEEP_ME (revision 2)');
      } finally {
        await sb.cleanup();
      }
    }));
});
