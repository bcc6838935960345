import { expect } from 'chai';
import type { Browser, Page } from 'playwright-core';
import { existsSync } from 'node:fs';
import { startTestServer, type TestServer } from '../support/server.js';
import { fixtureRepo, type FixtureRepo } from '../support/repo.js';
import { client } from '../support/http.js';
import { skipUnlessCi } from '../support/skip.js';
import { CHROMIUM, launch, screenshot, signIn, withPassword } from './support.js';

/**
 * Review on the CR page in chromium: a person comments on a line of
 * the diff and the comment shows at that line, hostile bodies render as text, Resolve,
 * and "changes since your last review" after a push, cleared by "Mark reviewed".
 */
describe('dashboard: review comments on the CR page (chromium)', function () {
  this.timeout(90_000);
  let srv: TestServer;
  let repo: FixtureRepo;
  let browser: Browser;
  let page: Page;
  let pid: string;
  let api: ReturnType<typeof client>;

  before(async function () {
    if (!existsSync(CHROMIUM)) skipUnlessCi(this, `${CHROMIUM} is not installed`);
    srv = await startTestServer();
    repo = await fixtureRepo();
    api = client(srv.url, srv.token);
    pid = (await api.post('/v1/projects', { name: 'Review demo', slug: 'rv', repo_url: repo.url })).body.project.project_id;
    await withPassword(srv);
    browser = await launch();
    page = await (await browser.newContext({ viewport: { width: 1200, height: 900 } })).newPage();
    await signIn(page, srv.url);
  });
  after(async () => {
    await browser?.close();
    await srv?.stop();
    await repo?.cleanup();
  });

  it('comments on a line and it shows at that line; hostile bodies are text; resolve; changes since the last review', async () => {
    await repo.commit('feat-review', { 'app.txt': 'one\ntwo\nthree\n' });
    const cr = (await api.post('/v1/projects/rv/change-requests', { title: 'Review me', head_ref: 'feat-review' })).body.change_request;
    const url = `${srv.url}/projects/${pid}/change-requests/${cr.number}`;
    page.on('dialog', (d) => void d.dismiss());
    await page.goto(url);
    expect(await page.locator('[data-review="never"]').count()).to.equal(1);

    const evil = '<script>window.__xss = 1</script><img src=x onerror="window.__xss=2"> line two?';
    // A click on line 2's number (new side) points the form at it.
    await page.locator('details.file[data-path="app.txt"] table.diff tr.add td:nth-child(2)', { hasText: /^2$/ }).click();
    expect(await page.locator('#comment-form select[name=path]').inputValue()).to.equal('app.txt');
    expect(await page.locator('#comment-form input[name=line]').inputValue()).to.equal('2');
    expect(await page.locator('#comment-form select[name=side]').inputValue()).to.equal('RIGHT');
    await page.locator('#comment-form textarea[name=body]').fill(evil);
    await page.getByRole('button', { name: 'Comment', exact: true }).click();
    const at = page.locator('tr.line-comments[data-path="app.txt"][data-side="RIGHT"][data-line="2"] .comment-body');
    await at.waitFor();
    expect(await at.innerText()).to.equal(evil);
    // The comment row sits right under line 2 of the new file.
    const prev = await page.locator('tr.line-comments').evaluate((tr) => (tr.previousElementSibling as unknown as { innerText: string }).innerText);
    expect(prev).to.contain('+two');
    expect(await page.evaluate(() => (globalThis as unknown as { __xss?: number }).__xss)).to.equal(undefined);

    // A general comment, then resolve the line comment. While it is being typed the CR
    // changes (its title, from the API): the live refresh keeps what was typed.
    await page.locator('#comment-form textarea[name=body]').fill('General <b>note</b>');
    const refreshed = page.evaluate(() => new Promise<void>((r) => (globalThis as unknown as { document: { addEventListener(t: string, f: () => void, o: { once: boolean }): void } }).document.addEventListener('svc:live', () => r(), { once: true })));
    expect((await api.call('PATCH', `/v1/projects/rv/change-requests/${cr.number}`, { title: 'Review me, renamed' })).status).to.equal(200);
    await refreshed;
    await page.locator('h1 .title', { hasText: 'Review me, renamed' }).waitFor();
    expect(await page.locator('#comment-form textarea[name=body]').inputValue()).to.equal('General <b>note</b>');
    await page.getByRole('button', { name: 'Comment', exact: true }).click();
    await page.locator('.comments.general .comment-body', { hasText: 'General <b>note</b>' }).waitFor();
    await page.locator('tr.line-comments .comment').getByRole('button', { name: 'Resolve' }).click();
    await page.locator('tr.line-comments .comment[data-resolved="true"]').waitFor();
    const listed = (await api.get(`/v1/projects/rv/change-requests/${cr.number}/comments`)).body.comments as { body: string; resolved: boolean; path: string | null }[];
    expect(listed.map((c) => [c.body, c.resolved, c.path])).to.deep.equal([[evil, true, 'app.txt'], ['General <b>note</b>', false, null]]);

    // A push after my last comment: the page says what changed since; Mark reviewed clears it.
    await repo.commit('feat-review', { 'more.txt': 'more\n' });
    await page.goto(url);
    const since = page.locator('[data-review="changed"]');
    await since.waitFor();
    expect(await since.innerText()).to.contain('more.txt').and.not.contain('app.txt');
    await screenshot(page, 'cr-review');
    await page.getByRole('button', { name: 'Mark reviewed' }).click();
    await page.locator('[data-review="current"]').waitFor();
    expect(await page.evaluate(() => (globalThis as unknown as { __xss?: number }).__xss)).to.equal(undefined);
  });
});
