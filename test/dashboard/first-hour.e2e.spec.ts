import { expect } from 'chai';
import net from 'node:net';
import type { Browser } from 'playwright-core';
import { agentReady, waitForStatus, withSessionProject } from '../support/sessions.js';
import { launch, screenshot, signIn, withPassword } from './support.js';

async function closedPort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as net.AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

/**
 * The pages a new user reads in the first hour say what happened (chromium, real sessions
 * on the scripted runtime): the sessions list names each session by its first prompt with
 * its state and CRs, a preview where nothing listens says so and how to start a server,
 * and the tokens page puts the person's own tokens before the ones sandboxes were issued.
 */
describe('dashboard pages that say what happened, in chromium', function () {
  this.timeout(180_000);
  let browser: Browser | undefined;
  afterEach(async () => {
    await browser?.close();
    browser = undefined;
  });

  it('sessions list: first prompts, status, agent state, CRs; a preview with nothing listening shows its empty state; tokens: the person’s first, sandboxes’ folded per session', () =>
    withSessionProject({ slug: 'firsthour' }, async (p) => {
      // One session created with its first prompt, one whose first prompt went to its agent later.
      // Markup in a prompt is text on the page (the title is another person's words there).
      const a = (await p.api.post(p.sessions, { prompt: 'Add a <b>greeting</b> section to README.md' })).body.session;
      const b = (await p.api.post(p.sessions, {})).body.session;
      await waitForStatus(p.api, `${p.sessions}/${a.session_id}`, ['running']);
      await waitForStatus(p.api, `${p.sessions}/${b.session_id}`, ['running']);
      await agentReady(p.api, `${p.sessions}/${b.session_id}/agent/fake/state`);
      let prompted = await p.api.post(`${p.sessions}/${b.session_id}/prompt`, { text: 'Fix the footer links' });
      while (prompted.status === 503) prompted = await p.api.post(`${p.sessions}/${b.session_id}/prompt`, { text: 'Fix the footer links' });
      expect(prompted.status, JSON.stringify(prompted.body)).to.equal(202);
      // A second prompt does not rename it.
      expect((await p.api.post(`${p.sessions}/${b.session_id}/prompt`, { text: 'and the header' })).status).to.equal(202);
      const cr = await p.api.post(p.base, { title: 'Greeting', head_ref: a.branch });
      expect(cr.status, JSON.stringify(cr.body)).to.equal(201);
      expect((await p.api.get(`${p.sessions}/${b.session_id}`)).body.session.title).to.equal('Fix the footer links');

      await withPassword(p.srv);
      browser = await launch();
      const page = await (await browser.newContext()).newPage();
      await signIn(page, p.srv.url);

      await page.goto(`${p.srv.url}/projects/${a.project_id}/sessions`);
      const rowA = page.locator(`tr[data-session="${a.session_id}"]`);
      const rowB = page.locator(`tr[data-session="${b.session_id}"]`);
      expect(await rowA.getByRole('link', { name: /Add a <b>greeting<\/b> section to README\.md/ }).count()).to.equal(1);
      expect(await rowA.locator('b').count(), 'no markup from the prompt').to.equal(0);
      expect(await rowB.getByRole('link', { name: /Fix the footer links/ }).count()).to.equal(1);
      expect(await rowA.innerText()).to.contain('running').and.contain('ready').and.contain(`#${cr.body.change_request.number}`);
      expect(await rowB.innerText()).to.contain('none'); // no CR yet
      await screenshot(page, 'sessions-list-first-prompts');

      // The preview of a port where nothing listens: an empty state, not a blank frame.
      const port = await closedPort();
      await page.goto(`${p.srv.url}/projects/${a.project_id}/sessions/${a.session_id}?port=${port}`);
      const frame = page.frameLocator('iframe.preview-frame');
      await frame.locator(`[data-preview-empty="${port}"]`).waitFor();
      const empty = await frame.locator('main').innerText();
      expect(empty).to.contain(`Nothing listens on port ${port} yet`).and.contain('Start a server in the session').and.contain(`python3 -m http.server ${port}`);
      await screenshot(page, 'preview-nothing-listening');

      // Tokens: the person's own first; each running session's sandbox tokens in a folded group.
      await page.goto(`${p.srv.url}/tokens`);
      const headings = await page.locator('main h2').allInnerTexts();
      expect(headings[0]).to.equal('Your tokens');
      expect(headings[1]).to.equal('Issued to sessions');
      const ownRows = page.locator('h2:text("Your tokens") + table tbody tr');
      expect(await ownRows.count()).to.be.greaterThan(0);
      const groups = page.locator('details.session-tokens');
      expect(await groups.count()).to.equal(2); // one per session
      for (const sid of [a.session_id, b.session_id]) {
        const g = page.locator(`details[data-session-tokens="${sid}"]`);
        expect(await g.getAttribute('open'), 'folded').to.equal(null);
        expect(await g.locator('tbody tr').first().isVisible()).to.equal(false);
      }
      await page.locator(`details[data-session-tokens="${a.session_id}"] summary`).click();
      expect(await page.locator(`details[data-session-tokens="${a.session_id}"] tbody tr`).first().isVisible()).to.equal(true);
      // Nothing a sandbox was issued is among the person's own rows.
      expect(await ownRows.allInnerTexts()).to.satisfy((rows: string[]) => rows.every((r) => !r.includes('session ') && !r.includes('clone-credential')));
      await screenshot(page, 'tokens-grouped');
    }));
});
