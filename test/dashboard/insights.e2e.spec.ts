import { expect } from 'chai';
import type { Browser } from 'playwright-core';
import { withProject } from '../support/server.js';
import { runInsightsWorkload } from '../support/insights-workload.js';
import { runSvc, sandbox } from '../cli/helpers.js';
import { formatDuration, formatKey, formatMoney, formatRate } from '../../lib/insight-format.js';
import { dashFetch, launch, screenshot, signIn, signInHttp, withPassword } from './support.js';

/**
 * The insights page in chromium (docs/insights.md): after the scripted workload, its
 * totals, tables and chart bars are the API's numbers and the CLI's, at desktop and phone
 * width, with no console error (a CSP refusal of an inline style or script is one), and
 * nothing wider than the phone's screen. Another tenant gets the 404 page.
 */
describe('dashboard insights page in chromium', function () {
  this.timeout(120_000);
  let browser: Browser | undefined;
  afterEach(async () => {
    await browser?.close();
    browser = undefined;
  });

  it('shows the same numbers as the API and the CLI, no console errors, at desktop and 390 px', () =>
    withProject({ slug: 'insweb' }, async ({ srv, api }) => {
      const pid = (await api.get('/v1/projects/insweb')).body.project.project_id as string;
      await runInsightsWorkload(srv.db.db, { projectId: pid, accountId: srv.accountId, userId: srv.userId });
      const to = new Date(Date.now() + 60_000).toISOString();
      const from = new Date(Date.now() - 7 * 86_400_000).toISOString();
      const q = `from=${encodeURIComponent(from)}&to=${encodeURIComponent(to)}`;
      const fromApi = async (groupBy: string) => (await api.get(`/v1/projects/insweb/insights?${q}&group_by=${groupBy}`)).body;
      const [weeks, models, agents] = [await fromApi('week'), await fromApi('model'), await fromApi('agent')];
      expect(models.total.crs_merged).to.equal(3);

      const sb = await sandbox();
      let cliTotal;
      try {
        const cli = await runSvc(['insights', '--json', '--since', '7d'], { now: new Date(), configPath: sb.configPath, env: { SVC_API_URL: `${srv.url}/v1`, SVC_CLI_TOKEN: srv.token, SVC_PROJECT_ID: 'insweb' }, cwd: sb.dir });
        expect(cli.code, cli.stderr).to.equal(0);
        cliTotal = JSON.parse(cli.stdout).total;
      } finally {
        await sb.cleanup();
      }
      expect(cliTotal).to.deep.equal(models.total);

      await withPassword(srv);
      browser = await launch();
      for (const viewport of [{ width: 1200, height: 900 }, { width: 390, height: 844 }]) {
        const page = await (await browser.newContext({ viewport })).newPage();
        const problems: string[] = [];
        page.on('console', (m) => void (m.type() === 'error' && problems.push(m.text())));
        page.on('pageerror', (e) => void problems.push(e.message));
        page.on('response', (r) => void (r.status() >= 400 && problems.push(`${r.status()} ${r.url()}`)));
        await signIn(page, srv.url);
        await page.goto(`${srv.url}/projects/${pid}/insights?${q}`);
        await page.getByRole('heading', { name: 'Insights' }).waitFor();

        const stat = (m: string) => page.locator(`#totals [data-metric="${m}"] dd`).innerText();
        const t = models.total;
        expect(await stat('crs_opened')).to.equal(String(t.crs_opened));
        expect(await stat('crs_merged')).to.equal(String(t.crs_merged));
        expect(await stat('crs_closed_unmerged')).to.equal(String(t.crs_closed_unmerged));
        expect(await stat('merge_rate')).to.equal(formatRate(t.merge_rate));
        expect(await stat('median_seconds_to_merge')).to.equal(formatDuration(t.median_seconds_to_merge));
        expect(await stat('review_rounds')).to.equal(String(t.review_rounds));
        expect(await stat('checks_failed_first_run')).to.equal(String(t.checks_failed_first_run));
        expect(await stat('sessions_without_cr')).to.equal(String(t.sessions_without_cr));
        expect(await stat('input_tokens')).to.equal(`${t.input_tokens}/${t.output_tokens}`);
        expect(await stat('money')).to.equal(`${formatMoney(t.money)} (+1 unpriced)`);
        expect(await stat('cost_per_merged_cr')).to.equal(formatMoney(t.cost_per_merged_cr));

        // The tables: one row per model and agent, the API's groups.
        for (const [id, report] of [['by-model', models], ['by-agent', agents]] as const) {
          const rows = page.locator(`#${id} tbody tr`);
          expect(await rows.count()).to.equal(report.groups.length);
          for (const g of report.groups) {
            const row = page.locator(`#${id} tbody tr[data-key="${g.key ?? ''}"]`);
            expect(await row.locator('th').innerText()).to.equal(formatKey(g.key, report.group_by));
            expect(await row.locator('[data-metric="crs_merged"]').innerText()).to.contain(String(g.crs_merged));
            expect(await row.locator('[data-metric="money"]').innerText()).to.contain(formatMoney(g.money));
          }
        }

        // The charts: each bar's value is the API's, and its label says it.
        const bars = async (id: string) => page.locator(`#${id} svg g[data-label]`).evaluateAll((gs) => gs.map((g) => [g.getAttribute('data-label'), Number(g.getAttribute('data-value')), g.querySelector('text:last-of-type')?.textContent ?? '']));
        const merged = await bars('chart-merged');
        expect(merged.map(([label, value]) => [label, value])).to.deep.equal(weeks.groups.map((g: { key: string; crs_merged: number }) => [g.key, g.crs_merged]));
        const cost = await bars('chart-cost');
        expect(cost.reduce((n, [, v]) => n + (v as number), 0)).to.be.closeTo(t.money[0].amount, 1e-9);
        const perCr = await bars('chart-cost-per-cr');
        expect(perCr.map(([label, value]) => [label, value])).to.deep.equal(
          models.groups.filter((g: { crs_merged: number }) => g.crs_merged > 0).map((g: { key: string; cost_per_merged_cr: { amount: number }[] }) => [g.key, g.cost_per_merged_cr[0]!.amount]),
        );
        const rates = await bars('chart-merge-rate');
        expect(rates.map(([label, value, text]) => [label, value, text])).to.deep.equal(
          agents.groups.filter((g: { merge_rate: number | null }) => g.merge_rate !== null).map((g: { key: string; merge_rate: number }) => [g.key, g.merge_rate, formatRate(g.merge_rate)]),
        );

        // Readable at phone width: nothing wider than the screen, every chart inside it.
        const widths = await page.evaluate(() => {
          const d = (globalThis as unknown as { document: { documentElement: { scrollWidth: number }; querySelectorAll(s: string): ArrayLike<{ getBoundingClientRect(): { right: number } }> } }).document;
          return { doc: d.documentElement.scrollWidth, charts: Array.from(d.querySelectorAll('figure.chart svg')).map((s) => s.getBoundingClientRect().right) };
        });
        expect(widths.doc, 'page width').to.be.at.most(viewport.width);
        for (const right of widths.charts) expect(right).to.be.at.most(viewport.width);
        await screenshot(page, `insights-${viewport.width}`);
        expect(problems, problems.join('\n')).to.deep.equal([]);
      }

      // A window that is not one: a 400 page, never a 500.
      const mine = await signInHttp(srv.url);
      for (const bad of ['from=yesterday', `from=${encodeURIComponent(to)}&to=${encodeURIComponent(from)}`]) {
        const r = await dashFetch(srv.url, mine, `/projects/${pid}/insights?${bad}`);
        expect(r.status, bad).to.equal(400);
      }

      // Another tenant: the 404 page, no numbers.
      const other = await srv.newUser('stranger@example.test');
      expect(other.accountId).to.not.equal(srv.accountId);
      await withPassword(srv, 'stranger@example.test');
      const cookie = await signInHttp(srv.url, 'stranger@example.test');
      const theirs = await dashFetch(srv.url, cookie, `/projects/${pid}/insights`);
      expect(theirs.status).to.equal(404);
      expect(theirs.text).to.not.contain('data-metric');
    }));
});
