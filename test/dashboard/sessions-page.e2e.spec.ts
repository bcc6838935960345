import { expect } from 'chai';
import { chmod } from 'node:fs/promises';
import type { Browser } from 'playwright-core';
import { chatRuntime } from '../sessions-cli/support.js';
import { waitForStatus, withSessionProject } from '../support/sessions.js';
import { launch, screenshot, signIn, withPassword } from './support.js';

/** The session page in chromium, against a real session (scripted opencode-like runtime). */
describe('dashboard session page in chromium', function () {
  this.timeout(120_000);
  let browser: Browser | undefined;
  before(() => chmod(chatRuntime, 0o755));
  afterEach(async () => {
    await browser?.close();
    browser = undefined;
  });

  it('shows the session, chats with the agent through the proxy (cookie), refreshes, stops live', () =>
    withSessionProject({ slug: 'live', env: { SVC_AGENT_RUNTIME: chatRuntime } }, async (p) => {
      const created = await p.api.post(p.sessions, {});
      expect(created.status).to.equal(201);
      const s = await waitForStatus(p.api, `${p.sessions}/${created.body.session.session_id}`, ['running']);
      await withPassword(p.srv);
      browser = await launch();
      const page = await (await browser.newContext({ viewport: { width: 390, height: 844 } })).newPage(); // phone width
      await signIn(page, p.srv.url);
      await page.goto(`${p.srv.url}/projects/${s.project_id}/sessions`);
      await page.getByRole('link', { name: s.session_id.slice(0, 8) }).click();
      await page.waitForURL(`${p.srv.url}/projects/${s.project_id}/sessions/${s.session_id}`);
      const facts = await page.locator('dl.facts').innerText();
      expect(facts).to.contain('running').and.contain(s.session_id).and.contain('main');

      // The chat pane: the prompt goes to the agent through the server's proxy, with the
      // dashboard cookie (and CSRF header); the reply streams back over its event feed.
      await page.getByLabel('Message').fill('hello from the browser');
      await page.getByRole('button', { name: 'Send' }).click();
      await page.locator('#chat-log', { hasText: 'You said: hello from the browser. Done.' }).waitFor();
      await screenshot(page, 'session-page');

      // Without the page's CSRF token, the cookie does not drive the agent.
      const cookie = (await page.context().cookies()).find((c) => c.name === '__Host-svc_session')!;
      const forged = await fetch(`${p.srv.url}/v1/projects/${s.project_id}/sessions/${s.session_id}/agent/session`, {
        method: 'POST',
        headers: { cookie: `__Host-svc_session=${cookie.value}`, 'content-type': 'application/json' },
        body: '{}',
      });
      expect(forged.status).to.equal(401);

      await page.getByRole('button', { name: 'Refresh' }).click();
      await page.locator('#notice').getByText('Refresh requested').waitFor();

      await page.getByRole('button', { name: 'Stop' }).click();
      await page.locator('[data-live="session-head"] [data-status="stopped"]').waitFor();
    }));

  it('without a model, a prompt from the page is refused at once and the chat says what to configure', () =>
    withSessionProject({ slug: 'nomodel', env: { SVC_AGENT_RUNTIME: chatRuntime, SVC_LLM_UPSTREAM_URL: '', SVC_LLM_UPSTREAM_KEY: '', SVC_LLM_MODEL: '' } }, async (p) => {
      const created = await p.api.post(p.sessions, {});
      const s = await waitForStatus(p.api, `${p.sessions}/${created.body.session.session_id}`, ['running']);
      await withPassword(p.srv);
      browser = await launch();
      const page = await (await browser.newContext()).newPage();
      await signIn(page, p.srv.url);
      await page.goto(`${p.srv.url}/projects/${s.project_id}/sessions/${s.session_id}`);
      await page.locator('[data-agent-state="ready"]').waitFor({ state: 'attached' });
      const t0 = Date.now();
      await page.getByLabel('Message').fill('hello?');
      await page.getByRole('button', { name: 'Send' }).click();
      const alert = page.locator('#chat-log [role="alert"]');
      await alert.waitFor();
      // Refused by the server before reaching the runtime (agent-readiness.int holds the API to
      // the spec's 2 s); here, well short of the runtime's minute of retries, under any load.
      expect(Date.now() - t0).to.be.below(15_000);
      expect(await alert.innerText()).to.match(/SVC_LLM_UPSTREAM_URL/).and.match(/docs\/models\.md/);
      expect(await page.locator('#chat-log .turn').count()).to.equal(0); // nothing reached the runtime
    }));
});
