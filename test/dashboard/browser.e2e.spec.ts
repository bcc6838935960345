import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { startTestServer, type TestServer } from '../support/server.js';
import { fixtureRepo, type FixtureRepo } from '../support/repo.js';
import { client } from '../support/http.js';
import { binPath, sandbox, type Sandbox } from '../cli/helpers.js';
import { launch, screenshot, signIn, withPassword } from './support.js';

/** The dashboard in a real browser (Debian's chromium), against a real server and repo. */
describe('dashboard in chromium', function () {
  this.timeout(90_000);
  let srv: TestServer;
  let repo: FixtureRepo;
  let browser: Browser;
  let ctx: BrowserContext;
  let page: Page;
  let api: ReturnType<typeof client>;
  const slug = 'web';
  const crs = `/v1/projects/${slug}/change-requests`;
  let pid: string;

  const openCr = async (head: string, files: Record<string, string>, title = `Change ${head}`) => {
    await repo.commit(head, files);
    const r = await api.post(crs, { title, head_ref: head, description: 'Why: because.' });
    expect(r.status, JSON.stringify(r.body)).to.equal(201);
    return r.body.change_request as { number: number; cr_id: string };
  };

  before(async () => {
    srv = await startTestServer();
    repo = await fixtureRepo();
    api = client(srv.url, srv.token);
    const p = await api.post('/v1/projects', { name: 'Web demo', slug, repo_url: repo.url });
    pid = p.body.project.project_id;
    await withPassword(srv);
    browser = await launch();
    ctx = await browser.newContext({ viewport: { width: 1200, height: 900 } });
    page = await ctx.newPage();
  });
  after(async () => {
    await browser?.close();
    await srv?.stop();
    await repo?.cleanup();
  });

  it('refuses a wrong password, then signs in and lands on the projects list', async () => {
    await page.goto(`${srv.url}/projects/${pid}`);
    expect(page.url()).to.contain('/login?next=');
    await page.getByLabel('Email').fill('owner@example.test');
    await page.getByLabel('Password').fill('wrong password!');
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.getByText('Wrong email or password.').waitFor();
    await page.getByLabel('Password').fill('correct horse battery staple');
    await Promise.all([page.waitForURL(`${srv.url}/projects/${pid}`), page.getByRole('button', { name: 'Sign in', exact: true }).click()]);
    const cookies = await ctx.cookies();
    const c = cookies.find((x) => x.name === '__Host-svc_session')!;
    expect(c).to.include({ httpOnly: true, sameSite: 'Lax' });
    await page.goto(`${srv.url}/projects`);
    await page.getByRole('link', { name: 'Web demo' }).waitFor();
  });

  it('opens a CR from the list, reads its diff, merges it and sees the status change without a reload', async () => {
    const cr = await openCr('feat-hello', { 'hello.txt': 'hello from the agent\n' }, 'Add hello');
    await page.goto(`${srv.url}/projects/${pid}`);
    await page.getByRole('link', { name: 'Add hello' }).click();
    await page.waitForURL(`${srv.url}/projects/${pid}/change-requests/${cr.number}`);
    await page.locator('details.file summary', { hasText: 'hello.txt' }).waitFor();
    expect(await page.locator('table.diff tr.add').first().innerText()).to.contain('+hello from the agent');
    expect(await page.locator('.preview').innerText()).to.contain('fast-forward');
    await screenshot(page, 'cr-page');
    await page.evaluate(() => ((globalThis as unknown as { marker: number }).marker = 42));
    await page.getByRole('button', { name: 'Merge' }).click();
    await page.locator('[data-live="cr-head"] [data-status="merged"]').waitFor();
    expect(await page.evaluate(() => (globalThis as unknown as { marker?: number }).marker)).to.equal(42); // no reload
    expect(repo.tip('main')).to.equal(repo.tip('feat-hello'));
  });

  it('shows a status change made elsewhere, live, on the list', async () => {
    const cr = await openCr('feat-live', { 'live.txt': 'x\n' }, 'Live one');
    await page.goto(`${srv.url}/projects/${pid}?status=all`);
    await page.evaluate(() => ((globalThis as unknown as { marker: number }).marker = 7));
    const row = page.locator(`tr[data-cr="${cr.number}"] [data-status]`);
    expect(await row.getAttribute('data-status')).to.equal('open');
    expect((await api.post(`${crs}/${cr.number}/close`)).status).to.equal(200);
    await page.locator(`tr[data-cr="${cr.number}"] [data-status="closed"]`).waitFor();
    expect(await page.evaluate(() => (globalThis as unknown as { marker?: number }).marker)).to.equal(7);
  });

  it('refuses a merge of a head pushed to after the page loaded ("Head branch was modified")', async () => {
    const cr = await openCr('feat-stale', { 'stale.txt': 'v1\n' });
    await page.goto(`${srv.url}/projects/${pid}/change-requests/${cr.number}`);
    await repo.commit('feat-stale', { 'stale.txt': 'v2, unseen\n' });
    await page.getByRole('button', { name: 'Merge' }).click();
    await page.locator('#notice').getByText('Head branch was modified').waitFor();
    const after = await api.get(`${crs}/${cr.number}`);
    expect(after.body.change_request.status).to.equal('open');
  });

  it('the same refusal without JavaScript: a plain form post comes back with the message', async () => {
    const noJs = await browser.newContext({ javaScriptEnabled: false });
    try {
      const p = await noJs.newPage();
      await signIn(p, srv.url);
      const cr = await openCr('feat-nojs', { 'nojs.txt': 'a\n' });
      await p.goto(`${srv.url}/projects/${pid}/change-requests/${cr.number}`);
      expect(await p.locator('table.diff').innerText()).to.contain('+a');
      await repo.commit('feat-nojs', { 'nojs.txt': 'b\n' });
      await p.getByRole('button', { name: 'Merge' }).click();
      await p.getByText('Head branch was modified since this page loaded').waitFor();
      // Reloaded: the page now shows (and sends) the new head; the merge goes through.
      await p.getByRole('button', { name: 'Merge' }).click();
      await p.locator('[data-status="merged"]').first().waitFor();
    } finally {
      await noJs.close();
    }
  });

  it('closes and reopens', async () => {
    const cr = await openCr('feat-close', { 'c.txt': 'c\n' });
    await page.goto(`${srv.url}/projects/${pid}/change-requests/${cr.number}`);
    await page.getByRole('button', { name: 'Close' }).click();
    await page.locator('[data-live="cr-head"] [data-status="closed"]').waitFor();
    await page.getByRole('button', { name: 'Reopen' }).click();
    await page.locator('[data-live="cr-head"] [data-status="open"]').waitFor();
    expect((await api.get(`${crs}/${cr.number}`)).body.change_request.status).to.equal('open');
  });

  it('edits the title, and shows the CR as of an earlier event in its history', async () => {
    const cr = await openCr('feat-edit', { 'e.txt': 'e\n' }, 'Old title');
    await page.goto(`${srv.url}/projects/${pid}/change-requests/${cr.number}`);
    await page.getByText('Edit title and description').click();
    await page.getByLabel('Title').fill('New title');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.locator('[data-live="cr-head"] .title', { hasText: 'New title' }).waitFor();
    await page.reload();
    const opened = page.locator('.timeline li', { hasText: 'opened' });
    await opened.getByRole('link', { name: 'view as of' }).click();
    await page.waitForURL(/as_of=/);
    expect(await page.locator('h1 .title').innerText()).to.equal('Old title');
    await page.getByText('Viewing this change request as it was').waitFor();
  });

  it('renders a <script> in a CR title and in a diff as text, never runs it', async () => {
    const evil = '<script>window.__xss = 1</script><img src=x onerror="window.__xss=2">';
    const cr = await openCr('feat-xss', { 'x.html': `${evil}\n` }, evil);
    page.on('dialog', (d) => void d.dismiss());
    await page.goto(`${srv.url}/projects/${pid}/change-requests/${cr.number}`);
    expect(await page.locator('h1 .title').innerText()).to.equal(evil);
    expect(await page.locator('table.diff').innerText()).to.contain(`+${evil}`);
    await page.goto(`${srv.url}/projects/${pid}?status=all`);
    await page.getByRole('link', { name: evil }).waitFor();
    expect(await page.evaluate(() => (globalThis as unknown as { __xss?: number }).__xss)).to.equal(undefined);
  });

  it('refuses a cross-site form post (CSRF), even with the cookie', async () => {
    if (!(await ctx.cookies()).some((c) => c.name === '__Host-svc_session')) await signIn(page, srv.url);
    const cr = await openCr('feat-csrf', { 'csrf.txt': 'z\n' });
    const evil = http.createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end(`<form id=f method=post action="${srv.url}/projects/${pid}/change-requests/${cr.number}/close"><input name=x value=1></form><script>f.submit()</script>`);
    });
    await new Promise<void>((r) => evil.listen(0, '127.0.0.1', () => r()));
    try {
      // Another port of the same host is the same *site*: SameSite=Lax sends the cookie, so
      // only the origin and token checks stand between this page and the CR.
      const attacker = await ctx.newPage();
      const refused = attacker.waitForResponse((r) => r.url().endsWith('/close'));
      await attacker.goto(`http://127.0.0.1:${(evil.address() as { port: number }).port}/`);
      const res = await refused;
      expect(res.status()).to.equal(403);
      expect(await res.text()).to.contain('Cross-site request refused');
      await attacker.close();
      // With the cookie and the right origin but no token: refused too.
      const cookie = (await ctx.cookies()).find((c) => c.name === '__Host-svc_session')!;
      const bare = await fetch(`${srv.url}/projects/${pid}/change-requests/${cr.number}/close`, {
        method: 'POST',
        headers: { cookie: `__Host-svc_session=${cookie.value}`, origin: srv.url, 'content-type': 'application/x-www-form-urlencoded' },
        body: 'x=1',
        redirect: 'manual',
      });
      expect(bare.status).to.equal(403);
    } finally {
      evil.close();
    }
    expect((await api.get(`${crs}/${cr.number}`)).body.change_request.status).to.equal('open');
  });

  it('approves a real `svc login` end to end; the state is single-use; deny ends the CLI with an error', async () => {
    const sb: Sandbox = await sandbox();
    try {
      const login = () => {
        const child = spawn(process.execPath, [binPath, 'login', '--api', srv.url], {
          env: { PATH: process.env.PATH ?? '', HOME: sb.home, SVC_CONFIG_FILE: sb.configPath, CI: '1' },
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        let err = '';
        let code = '';
        const url = new Promise<string>((resolve) => {
          child.stderr.on('data', (c: Buffer) => {
            err += c.toString();
            const m = /one-time code: ([A-Z]{4}-[A-Z]{4})[\s\S]*?(http:\/\/\S+\/cli\/login\?\S+)/.exec(err);
            if (m) {
              code = m[1]!;
              resolve(m[2]!);
            }
          });
        });
        const exit = new Promise<number>((r) => child.on('close', (c) => r(c ?? -1)));
        return { url, exit, stderr: () => err, code: () => code };
      };

      const ok = login();
      const url = await ok.url;
      await page.goto(url);
      await page.getByRole('heading', { name: `Authorize svc on ${os.hostname()}?` }).waitFor();
      // The link alone approves nothing: the code from the terminal is asked for.
      await page.getByLabel('Code from your terminal').fill('BBBB-BBBB');
      await page.getByRole('button', { name: 'Approve' }).click();
      await page.getByText('That is not the code svc login printed').waitFor();
      await page.getByLabel('Code from your terminal').fill(ok.code().toLowerCase());
      await page.getByRole('button', { name: 'Approve' }).click();
      await page.getByText('Logged in.').waitFor();
      expect(await ok.exit, ok.stderr()).to.equal(0);
      expect(ok.stderr()).to.contain('as Owner <owner@example.test>');
      const config = JSON.parse(await readFile(sb.configPath, 'utf8'));
      const host = Object.values(config.hosts as Record<string, { token?: string }>).find((h) => h.token)!;
      expect((await client(srv.url, host.token).get('/v1/accounts/me')).status).to.equal(200);
      // The link cannot be used twice.
      const again = await page.goto(url);
      expect(again!.status()).to.equal(410);

      const no = login();
      await page.goto(await no.url);
      await page.getByRole('button', { name: 'Deny' }).click();
      await page.getByText('Login denied').waitFor();
      expect(await no.exit).to.equal(1);
      expect(no.stderr()).to.contain('denied');
    } finally {
      await sb.cleanup();
    }
  });

  it('signs out: the old cookie no longer opens a page', async () => {
    const cookie = (await ctx.cookies()).find((c) => c.name === '__Host-svc_session')!;
    await page.goto(`${srv.url}/projects`);
    await page.getByRole('button', { name: 'Sign out', exact: true }).click();
    await page.waitForURL(/\/login$/);
    const r = await fetch(`${srv.url}/projects`, { headers: { cookie: `__Host-svc_session=${cookie.value}` }, redirect: 'manual' });
    expect(r.status).to.equal(303);
    expect(r.headers.get('location')).to.match(/^\/login/);
  });
});

