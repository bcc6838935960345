import { expect } from 'chai';
import { withProject } from '../../support/server.js';
import { client } from '../../support/http.js';
import { runInsightsWorkload, type Workload } from '../../support/insights-workload.js';
import { rebuildProjections } from '../../../projections/rebuild.js';
import { eventually } from '../../support/wait.js';
import { runSvc, sandbox } from '../../cli/helpers.js';
import { formatDuration, formatMoney, formatRate } from '../../../lib/insight-format.js';

/**
 * Outcomes from the log (docs/insights.md): a scripted workload on an injected clock
 * (test/support/insights-workload.ts) gives exactly the counts, seconds, tokens and money
 * per group; `as_of` a time between its phases gives that time's numbers; `from`/`to`
 * select by the events' recorded times; `rebuild --verify` is clean; another tenant sees
 * nothing.
 */
describe('insights (API)', function () {
  this.timeout(120_000);

  const zero = { crs_opened: 0, crs_merged: 0, crs_closed_unmerged: 0, merge_rate: null, median_seconds_to_merge: null, review_rounds: 0, checks_failed_first_run: 0, queue_ejections: 0, sessions_without_cr: 0, model_calls: 0, unpriced_calls: 0, input_tokens: 0, output_tokens: 0, money: [], cost_per_merged_cr: [] };
  const usd = (amount: number) => [{ currency: 'USD', amount }];

  it('a scripted workload: exact counts, seconds, tokens and money per model, agent and trigger; as_of mid-way; from/to; rebuild --verify clean', () =>
    withProject({ slug: 'ins' }, async ({ srv, api }) => {
      const project = (await api.get('/v1/projects/ins')).body.project;
      const w: Workload = await runInsightsWorkload(srv.db.db, { projectId: project.project_id, accountId: srv.accountId, userId: srv.userId });
      // The workers keep the projection following the log without anyone reading it.
      const facts = async () => (await srv.db.db.one<{ n: number }>({ text: 'SELECT count(*)::int AS n FROM insight_facts', values: [] }))!.n;
      await eventually(async () => (await facts()) > 0, 'the workers catching the insights projection up', { maxIntervalMs: 500 });
      const get = async (q: string) => {
        const r = await api.get(`/v1/projects/ins/insights${q}`);
        expect(r.status, JSON.stringify(r.body)).to.equal(200);
        return r.body;
      };
      const byKey = (body: { groups: { key: string | null }[] }): Record<string, any> => Object.fromEntries(body.groups.map((g) => [String(g.key), g]));

      const models = await get('?group_by=model');
      expect(models.group_by).to.equal('model');
      const m = byKey(models);
      expect(Object.keys(m).sort()).to.deep.equal(['model-a', 'model-b', 'model-u']);
      expect(m['model-a']).to.deep.equal({ ...zero, key: 'model-a', crs_opened: 3, crs_merged: 2, merge_rate: 1, median_seconds_to_merge: 2700, review_rounds: 1, checks_failed_first_run: 1, model_calls: 2, input_tokens: 5000, output_tokens: 1500, money: usd(0.0375), cost_per_merged_cr: usd(0.01875) });
      expect(m['model-b']).to.deep.equal({ ...zero, key: 'model-b', crs_opened: 2, crs_merged: 1, crs_closed_unmerged: 1, merge_rate: 0.5, median_seconds_to_merge: 7200, model_calls: 1, input_tokens: 2000, output_tokens: 1000, money: usd(0.007), cost_per_merged_cr: usd(0.007) });
      expect(m['model-u']).to.deep.equal({ ...zero, key: 'model-u', model_calls: 1, unpriced_calls: 1, input_tokens: 100, output_tokens: 50 });
      expect(models.total).to.deep.equal({ ...zero, key: null, crs_opened: 5, crs_merged: 3, crs_closed_unmerged: 1, merge_rate: 0.75, median_seconds_to_merge: 3600, review_rounds: 1, checks_failed_first_run: 1, model_calls: 4, unpriced_calls: 1, input_tokens: 7100, output_tokens: 2550, money: usd(0.0445), cost_per_merged_cr: usd(0.014833) });

      const agents = byKey(await get('?group_by=agent'));
      expect(agents.opencode).to.include({ crs_opened: 4, crs_merged: 3, crs_closed_unmerged: 1, merge_rate: 0.75, model_calls: 4, sessions_without_cr: 0 });
      expect(agents.claude).to.include({ crs_opened: 1, crs_merged: 0, merge_rate: null, model_calls: 0, sessions_without_cr: 0 });
      const triggers = byKey(await get('?group_by=trigger'));
      expect(triggers.nightly).to.include({ crs_opened: 2, crs_merged: 1, crs_closed_unmerged: 1, median_seconds_to_merge: 7200, model_calls: 2, unpriced_calls: 1 });
      expect(triggers.nightly.money).to.deep.equal(usd(0.007));
      expect(triggers.null).to.include({ crs_opened: 3, crs_merged: 2, median_seconds_to_merge: 2700 });
      const people = byKey(await get('?group_by=person'));
      expect(Object.keys(people)).to.deep.equal([srv.userId]);

      // As of the instant between the phases: C had ended without a CR then; CR4, CR5 and A's second call not yet.
      const then = await get(`?group_by=model&as_of=${encodeURIComponent(w.mid)}`);
      expect(then.as_of).to.equal(w.mid);
      const t = byKey(then);
      expect(t['model-a']).to.deep.equal({ ...zero, key: 'model-a', crs_opened: 1, crs_merged: 1, merge_rate: 1, median_seconds_to_merge: 3600, review_rounds: 1, checks_failed_first_run: 1, sessions_without_cr: 1, model_calls: 1, input_tokens: 1000, output_tokens: 500, money: usd(0.0105), cost_per_merged_cr: usd(0.0105) });
      expect(then.total).to.include({ crs_opened: 3, crs_merged: 2, crs_closed_unmerged: 1, merge_rate: 0.6667, median_seconds_to_merge: 5400, sessions_without_cr: 1, model_calls: 3 });
      expect(then.total.money).to.deep.equal(usd(0.0175));

      // From mid on: only phase two (CR4 closed then reopened: no closed CR in the window).
      const later = await get(`?from=${encodeURIComponent(w.mid)}`);
      expect(later.groups).to.deep.equal([]);
      expect(later.total).to.include({ crs_opened: 2, crs_merged: 1, crs_closed_unmerged: 0, median_seconds_to_merge: 1800, review_rounds: 0, model_calls: 1 });
      expect(later.total.money).to.deep.equal(usd(0.027));

      // The same facts read from whole hours (a window ending hours ahead) and from whole
      // minutes (a window of minutes around the workload): the same numbers.
      const ahead = new Date(Date.now() + 2 * 3_600_000).toISOString();
      const fromHours = await get(`?group_by=model&to=${encodeURIComponent(ahead)}&as_of=${encodeURIComponent(ahead)}`);
      expect(fromHours.groups).to.deep.equal(models.groups);
      expect(fromHours.total).to.deep.equal(models.total);
      const [tenAgo, twoAhead] = [new Date(Date.now() - 10 * 60_000).toISOString(), new Date(Date.now() + 2 * 60_000).toISOString()];
      const fromMinutes = await get(`?group_by=model&from=${encodeURIComponent(tenAgo)}&to=${encodeURIComponent(twoAhead)}&as_of=${encodeURIComponent(twoAhead)}`);
      expect(fromMinutes.groups).to.deep.equal(models.groups);

      // The weekly series sums to the total.
      const weeks = await get('?group_by=week');
      expect(weeks.groups.reduce((n: number, g: { crs_merged: number }) => n + g.crs_merged, 0)).to.equal(3);

      // The account's view holds the one project's numbers.
      const account = await api.get(`/v1/accounts/${srv.accountId}/insights?group_by=model`);
      expect(account.status, JSON.stringify(account.body)).to.equal(200);
      expect(account.body.total).to.deep.equal(models.total);

      // svc insights: the API's numbers, as JSON and as the table.
      const sb = await sandbox();
      try {
        const run = (args: string[]) => runSvc(args, { now: new Date(), configPath: sb.configPath, env: { SVC_API_URL: `${srv.url}/v1`, SVC_CLI_TOKEN: srv.token, SVC_PROJECT_ID: 'ins' }, cwd: sb.dir });
        const json = await run(['insights', '--json', '--group-by', 'model', '--since', '30d']);
        expect(json.code, json.stderr).to.equal(0);
        const cli = JSON.parse(json.stdout);
        expect(cli.groups).to.deep.equal(models.groups);
        expect(cli.total).to.deep.equal(models.total);
        const asOf = await run(['insights', '--json', '--group-by', 'model', '--as-of', w.mid]);
        expect(asOf.code, asOf.stderr).to.equal(0);
        expect(JSON.parse(asOf.stdout).groups).to.deep.equal(then.groups);
        const table = await run(['insights', '--group-by', 'model']);
        expect(table.code, table.stderr).to.equal(0);
        const lineA = table.stdout.split('\n').find((l) => l.startsWith('model-a\t'));
        expect(lineA?.split('\t')).to.deep.equal(['model-a', '3', '2', '0', formatRate(1), formatDuration(2700), '1', '1', '0', '0', '5000/1500', formatMoney(usd(0.0375)), formatMoney(usd(0.01875))]);
        expect(table.stdout).to.contain('model-u\t').and.contain('(+1 unpriced)');
        const acct = await run(['insights', '--json', '--account', srv.accountId, '--group-by', 'model']);
        expect(acct.code, acct.stderr).to.equal(0);
        expect(JSON.parse(acct.stdout)).to.include({ scope: 'account', id: srv.accountId });
        expect(JSON.parse(acct.stdout).total).to.deep.equal(models.total);
        const bad = await run(['insights', '--since', '30x']);
        expect(bad.code).to.equal(2);
        expect(bad.stderr.trim().split('\n')).to.have.length(1);
      } finally {
        await sb.cleanup();
      }

      // The projection replays to the same rows; a rebuild changes no answer.
      expect((await rebuildProjections(srv.db.db, { verify: true })).differences).to.deep.equal([]);
      await rebuildProjections(srv.db.db, { verify: false });
      expect((await rebuildProjections(srv.db.db, { verify: true })).differences).to.deep.equal([]);
      expect((await get('?group_by=model')).groups).to.deep.equal(models.groups);
    }));

  it('bad windows are 400s; another tenant gets 404 for the project and the account, a project token 403 on the account', () =>
    withProject({ slug: 'ins2' }, async ({ srv, api }) => {
      for (const q of ['?group_by=colour', '?from=yesterday', '?from=2026-03-02T00:00:00Z&to=2026-03-01T00:00:00Z', '?as_of=1', '?from=0000-01-01T00:00:00Z']) {
        const r = await api.get(`/v1/projects/ins2/insights${q}`);
        expect(r.status, q).to.equal(400);
        expect(r.body.error).to.be.a('string');
      }
      // as_of before the window: nothing had been recorded in it yet (200, all zero).
      const early = await api.get('/v1/projects/ins2/insights?from=2026-03-02T00:00:00Z&to=2026-03-03T00:00:00Z&as_of=2026-03-01T00:00:00Z&group_by=week');
      expect(early.status, JSON.stringify(early.body)).to.equal(200);
      expect(early.body).to.deep.include({ groups: [], total: { ...zero, key: null } });
      const other = await srv.newUser('other@example.test');
      const them = client(srv.url, other.token);
      expect((await them.get('/v1/projects/ins2/insights')).status).to.equal(404);
      const project = (await api.get('/v1/projects/ins2')).body.project;
      expect((await them.get(`/v1/projects/${project.project_id}/insights`)).status).to.equal(404);
      expect((await them.get(`/v1/accounts/${srv.accountId}/insights`)).status).to.equal(404);
      expect((await them.get('/v1/accounts/not-a-uuid/insights')).status).to.equal(404);
      const minted = await api.post('/v1/projects/ins2/cli-token');
      expect(minted.status).to.equal(201);
      const projectToken = client(srv.url, minted.body.token);
      expect((await projectToken.get('/v1/projects/ins2/insights')).status).to.equal(200);
      expect((await projectToken.get(`/v1/accounts/${srv.accountId}/insights`)).status).to.equal(403);
    }));
});
