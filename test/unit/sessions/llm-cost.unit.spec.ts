import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { ConfigError, configWarnings, loadConfig } from '../../../infra/config.js';
import type { ChangeRequest } from '../../../domain/change-request/index.js';
import type { ProjectRecord } from '../../../domain/project.js';
import type { Db } from '../../../infra/db/db.js';
import { moneyText, secondsText } from '../../../lib/cost-text.js';
import { crCostFrom } from '../../../services/cost/cost.js';
import { priceOf } from '../../../services/llm/prices.js';

/** SVC_LLM_PRICES, the price a call is charged at, a CR's check time, and how cost is written. */
describe('model prices and what a CR cost', () => {
  const problems = (v: string) => {
    try {
      loadConfig({ SVC_LLM_PRICES: v });
      return [];
    } catch (e) {
      expect(e).to.be.instanceOf(ConfigError);
      return (e as ConfigError).problems;
    }
  };

  it('SVC_LLM_PRICES: one currency, prices per million tokens; a bad value names itself and what is wrong', () => {
    expect(loadConfig({}).SVC_LLM_PRICES).to.equal(null);
    expect(loadConfig({ SVC_LLM_PRICES: '{"currency":"USD","models":{"gpt-x":{"input":3,"output":15},"free":{"input":0,"output":0}}}' }).SVC_LLM_PRICES).to.deep.equal({
      currency: 'USD',
      models: { 'gpt-x': { input: 3, output: 15 }, free: { input: 0, output: 0 } },
    });
    expect(problems('{bad')).to.have.length(1).and.to.satisfy((p: string[]) => p[0]!.startsWith('SVC_LLM_PRICES: not JSON'));
    expect(problems('{"currency":"US D","models":{}}')).to.deep.equal(['SVC_LLM_PRICES: currency: must be a currency name such as USD or EUR (letters, digits, _; at most 16)']);
    expect(problems('{"currency":"USD","models":{"m":{"input":-1,"output":2}}}')[0]).to.match(/^SVC_LLM_PRICES: models\.m\.input: /);
    expect(problems('{"currency":"USD","models":{"m":{"input":1}}}')[0]).to.match(/^SVC_LLM_PRICES: models\.m\.output: /);
    expect(problems('{"currency":"USD","models":{"m":{"input":"3","output":1}}}')[0]).to.match(/^SVC_LLM_PRICES: models\.m\.input: /);
    expect(problems('{"models":{}}')[0]).to.match(/^SVC_LLM_PRICES: currency: /);
    expect(problems('{"currency":"USD","models":{},"extra":1}')[0]).to.match(/^SVC_LLM_PRICES: /);
  });

  it('an offered model without a price is named in a warning at start', () => {
    const config = loadConfig({ SVC_LLM_MODEL: 'a', SVC_LLM_MODELS: 'a,b, c', SVC_LLM_PRICES: '{"currency":"USD","models":{"a":{"input":1,"output":2}}}' });
    expect(configWarnings(config, {})).to.deep.equal(['SVC_LLM_PRICES has no price for b, c: their calls are counted in tokens only, flagged unpriced (docs/models.md "Cost")']);
    expect(configWarnings(loadConfig({ SVC_LLM_MODEL: 'a' }), {}), 'no prices at all: nothing to warn about').to.deep.equal([]);
  });

  it('a call is charged the price of the model it named; a model without one (or named like a prototype key) is unpriced', () => {
    const prices = loadConfig({ SVC_LLM_PRICES: '{"currency":"EUR","models":{"a":{"input":1.5,"output":6}}}' }).SVC_LLM_PRICES;
    expect(priceOf(prices, 'a')).to.deep.equal({ input: 1.5, output: 6, currency: 'EUR' });
    expect(priceOf(prices, 'b')).to.equal(null);
    for (const name of ['__proto__', 'constructor', 'toString', 'hasOwnProperty']) expect(priceOf(prices, name), name).to.equal(null);
    expect(priceOf(null, 'a')).to.equal(null);
  });

  it("a CR's check time is its runs' durations: finished ones to their end, a running one to now, queued ones not at all", async () => {
    const now = new Date('2026-05-01T10:10:00Z');
    const cr = { cr_id: randomUUID(), number: 4, head_ref: 'feature' } as ChangeRequest;
    const sha = 'a'.repeat(40);
    const run = () => randomUUID();
    const [passed, running, queued, cancelled] = [run(), run(), run(), run()];
    const q = (id: string, name: string) => ({ type: 'CheckQueued', data: { run_id: id, name, base_sha: sha, head_sha: sha, merge_sha: sha, queued_at: '2026-05-01T10:00:00.000Z' } });
    const events = [
      q(passed, 'test'),
      q(running, 'lint'),
      q(queued, 'e2e'),
      q(cancelled, 'build'),
      { type: 'CheckStarted', data: { run_id: passed, started_at: '2026-05-01T10:00:00.000Z' } },
      { type: 'CheckPassed', data: { run_id: passed, finished_at: '2026-05-01T10:01:30.000Z' } },
      { type: 'CheckStarted', data: { run_id: running, started_at: '2026-05-01T10:09:00.000Z' } },
      { type: 'CheckStarted', data: { run_id: cancelled, started_at: '2026-05-01T10:02:00.000Z' } },
      { type: 'CheckCancelled', data: { run_id: cancelled, cancelled_at: '2026-05-01T10:02:10.000Z', reason: 'superseded' } },
    ];
    // A person's branch (not a session's): no statement is sent for model calls or sandboxes.
    const db = new Proxy({}, { get: () => () => Promise.reject(new Error('no statement expected')) }) as Db;
    const cost = await crCostFrom({ db, config: loadConfig({}), now: () => now }, { project_id: randomUUID() } as ProjectRecord, cr, events);
    expect(cost.check_runs).to.deep.equal([
      { run_id: passed, name: 'test', seconds: 90, running: false },
      { run_id: running, name: 'lint', seconds: 60, running: true },
      { run_id: cancelled, name: 'build', seconds: 10, running: false },
    ]);
    expect(cost).to.deep.include({ check_seconds: 160, session_id: null, requests: 0, money: [], sandbox_seconds: 0, cpu_seconds: null, unmetered: false });
  });

  it('money per currency, small amounts kept; seconds as a person reads them', () => {
    expect(moneyText([])).to.equal('–');
    expect(moneyText([{ currency: 'EUR', amount: 1.5 }, { currency: 'USD', amount: 0.0061234 }])).to.equal('EUR 1.50 + USD 0.006123');
    expect(moneyText([{ currency: 'USD', amount: 0 }])).to.equal('USD 0.00');
    expect([secondsText(0.4), secondsText(59), secondsText(185), secondsText(7440)]).to.deep.equal(['0 s', '59 s', '3 min 5 s', '2 h 4 min']);
  });
});
