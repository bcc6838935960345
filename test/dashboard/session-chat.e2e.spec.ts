import { expect } from 'chai';
import { existsSync } from 'node:fs';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { projectRoot } from '../../lib/paths.js';
import { startScriptedModel, type ScriptedModel } from '../support/scripted-model.js';
import { withSessionProject } from '../support/sessions.js';
import { skipUnlessCi } from '../support/skip.js';
import { launch, screenshot, signIn, withPassword } from './support.js';

/**
 * The session page's conversation in chromium, against the real runtime (`opencode serve`
 * in a process sandbox) whose model is the scripted one behind the server's gateway: the
 * user turn once, the agent's markdown, a tool call collapsed with its output, the CR the
 * agent opened, usage per prompt; the same after a reload; hostile markdown inert.
 */
const HOSTILE = [
  '<img src=x onerror="window.__pwned=1;alert(1)">',
  '<script>window.__pwned=2</script>',
  '[bad link](javascript:alert(1))',
  '![pixel](https://tracker.invalid/p.png)',
  '[quote break](https://example.com/" onmouseover="alert(1))',
].join('\n\n');
const ANSWER = `**Opened** the change request, see \`agent.txt\`.\n\n- first point\n- second point\n\n[the docs](https://example.com/docs)\n\n${HOSTILE}`;

describe('dashboard session page: the conversation (chromium, real runtime, scripted model)', function () {
  this.timeout(480_000); // 260 s seen at load 30 on 2 cores (the runtime's boot is most of it)
  const opencode = path.join(projectRoot, 'node_modules', '.bin', 'opencode');
  let model: ScriptedModel;
  let browser: Browser | undefined;
  before(async function () {
    if (!existsSync(opencode)) skipUnlessCi(this, `${opencode} is not installed`);
    model = await startScriptedModel({
      key: 'sk-upstream-chat',
      script: [
        {
          tool_calls: [{ name: 'bash', args: { command: 'echo tool-said-hello && printf x > agent.txt && git add agent.txt && git commit -q -m "Add agent.txt" && git push -q origin HEAD && PATH="$(dirname "$HOME")/bin:$PATH" svc cr open --title "Agent change" >/dev/null && echo cr-opened', description: 'commit and open a CR' } }],
          usage: { prompt_tokens: 1000, completion_tokens: 50 },
        },
        { text: ANSWER, usage: { prompt_tokens: 1200, completion_tokens: 20 } },
      ],
    });
  });
  after(async () => {
    await browser?.close();
    await model?.close();
  });

  const conversation = async (page: Page) => ({
    users: await page.locator('#chat-log .turn .user').allInnerTexts(),
    agent: await page.locator('#chat-log .turn .agent .md').allInnerTexts(),
    tools: await page.locator('#chat-log details.tool summary').allInnerTexts(),
  });

  it('shows the user turn once, the markdown answer, a collapsed tool call with its output, the CR, usage; again after a reload; hostile markdown stays inert', () =>
    withSessionProject(
      { slug: 'talk', env: { SVC_AGENT_RUNTIME: opencode, SVC_LLM_UPSTREAM_URL: model.url, SVC_LLM_UPSTREAM_KEY: 'sk-upstream-chat', SVC_LLM_MODEL: 'scripted', SVC_SESSION_PROVISION_TIMEOUT_SECONDS: '180' } },
      async (p) => {
        const created = await p.api.post(p.sessions, {});
        expect(created.status).to.equal(201);
        const id = created.body.session.session_id as string;
        await withPassword(p.srv);
        browser = await launch();
        const page = await (await browser.newContext()).newPage();
        const dialogs: string[] = [];
        page.on('dialog', (d) => {
          dialogs.push(d.message());
          void d.dismiss();
        });
        await signIn(page, p.srv.url);
        await page.goto(`${p.srv.url}/projects/${created.body.session.project_id}/sessions/${id}`);

        // "Starting" until the agent answers; the page turns ready by itself (live update).
        const state = await page.locator('[data-agent-state]').getAttribute('data-agent-state');
        if (state === 'starting') expect(await page.locator('[data-live="chat-state"]').innerText()).to.contain('The agent is starting');
        await page.locator('[data-agent-state="ready"]').waitFor({ state: 'attached', timeout: 180_000 });

        await page.getByLabel('Message').fill('Add agent.txt and open a change request');
        await page.getByRole('button', { name: 'Send' }).click();
        await page.locator('#chat-log .agent .md', { hasText: 'Opened the change request' }).waitFor({ timeout: 120_000 });
        // Usage per prompt: both model calls of it, once the last one finished.
        await page.locator('#chat-log .usage', { hasText: 'scripted · 2200 input tokens · 70 output tokens' }).waitFor();

        const before = await conversation(page);
        expect(before.users).to.deep.equal(['You\nAdd agent.txt and open a change request']);
        expect(before.tools).to.have.length(1);
        expect(before.tools[0]).to.match(/^bash/);
        // Markdown rendered: emphasis, inline code, a list, an http(s) link with a safe rel.
        const answer = page.locator('#chat-log .agent .md', { hasText: 'Opened the change request' });
        expect(await answer.locator('strong').first().innerText()).to.equal('Opened');
        expect(await answer.locator('code').first().innerText()).to.equal('agent.txt');
        expect(await answer.locator('li').allInnerTexts()).to.deep.equal(['first point', 'second point']);
        const docs = answer.getByRole('link', { name: 'the docs' });
        expect(await docs.getAttribute('href')).to.equal('https://example.com/docs');
        expect(await docs.getAttribute('rel')).to.equal('noopener noreferrer nofollow');

        // The tool call is collapsed; opened, it shows its output.
        const tool = page.locator('#chat-log details.tool').first();
        expect(await tool.evaluate((d) => (d as unknown as { open: boolean }).open)).to.equal(false);
        await tool.locator('summary').click();
        expect(await tool.innerText()).to.contain('tool-said-hello').and.contain('cr-opened');

        // The CR the agent opened is linked; the usage of the prompt is shown.
        await page.locator('[data-live="session-crs"] a', { hasText: 'Agent change' }).waitFor();
        await page.locator('[data-usage]').waitFor();

        // Hostile markdown from the model: no dialog, no element it asked for, no script run.
        const inert = async () => {
          expect(dialogs).to.deep.equal([]);
          expect(await page.evaluate(() => (globalThis as unknown as { __pwned?: number }).__pwned)).to.equal(undefined);
          expect(await page.locator('#chat-log img, #chat-log script, #chat-log [onerror], #chat-log [onmouseover]').count()).to.equal(0);
          for (const a of await page.locator('#chat-log a').all()) expect(await a.getAttribute('href')).to.match(/^https:\/\//);
          expect(await answer.innerText()).to.contain('<img src=x onerror=').and.contain('<script>window.__pwned=2</script>').and.contain('bad link');
          await answer.getByRole('link', { name: 'image: pixel' }).waitFor();
        };
        await inert();
        await screenshot(page, 'session-chat');

        // A second prompt continues the same conversation (the page passes its session_id).
        await page.getByLabel('Message').fill('and now?');
        await page.getByRole('button', { name: 'Send' }).click();
        await page.locator('#chat-log .agent .md', { hasText: /^Done\.$/ }).waitFor({ timeout: 60_000 });
        const after = await conversation(page);
        expect(after.users).to.deep.equal(['You\nAdd agent.txt and open a change request', 'You\nand now?']);

        // A reload reads the same conversation back through the proxy.
        await page.reload();
        await page.locator('#chat-log .agent .md', { hasText: /^Done\.$/ }).waitFor({ timeout: 30_000 });
        expect(await conversation(page)).to.deep.equal(after);
        await inert();

        // The CR the agent opened shows what it cost, as the API reports it: every call of the
        // session is its own (those before it opened belong to the next CR opened, this one).
        await page.locator('[data-live="session-crs"] a', { hasText: 'Agent change' }).click();
        await page.waitForURL(/\/change-requests\/1$/);
        const usage = (await p.api.get(`${p.sessions}/${id}`)).body.session.usage;
        expect(usage.by_model.map((m: { model: string }) => m.model)).to.deep.equal(['scripted']);
        const cost = (await p.api.get(`${p.base}/1/cost`)).body.cost;
        expect([cost.input_tokens, cost.output_tokens, cost.requests]).to.deep.equal([usage.input_tokens, usage.output_tokens, usage.requests]);
        expect(await page.locator('[data-cost]').innerText()).to.contain(
          `${cost.input_tokens.toLocaleString('en-US')} input · ${cost.output_tokens.toLocaleString('en-US')} output tokens (${cost.requests} model calls)`,
        );

        await p.api.post(`${p.sessions}/${id}/stop`, {});
      },
    ));
});
