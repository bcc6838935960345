import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { loadConfig, type Config } from '../../../infra/config.js';
import { reserve, settle, promptEstimate } from '../../../services/llm/ledger.js';
import { getBudget, setBudget } from '../../../services/budgets/service.js';
import { createTestDb, type TestDb } from '../../support/db.js';

/**
 * A money budget on the one ledger (services/llm/ledger.ts, services/budgets), against
 * PostgreSQL: each call reserved and charged in micro-units at its model's price, the
 * upstream granted only the output the money left, 80% and 100% recorded once, the next
 * call refused naming the budget, an unpriced model refused while the budget is set.
 * SVC_LLM_PRICES is read as infra/config parses it (services/budgets/prices.ts).
 */
const PRICES = { currency: 'USD', models: { m: { input: 3, output: 15 } } };
const configOf = (env: Record<string, string>): Config => ({ ...loadConfig({ LOG_LEVEL: 'silent', ...env }), SVC_LLM_PRICES: PRICES }) as Config;

describe('money budgets on the model ledger', function () {
  this.timeout(60_000);
  let t: TestDb;
  beforeEach(async () => {
    t = await createTestDb();
  });
  afterEach(() => t.drop());

  it('a call is held to what the money leaves at its price, crossings are recorded once, the next call is refused naming the budget; an unpriced model is refused', async () => {
    const config = configOf({});
    const project = randomUUID();
    const caller = { session_id: randomUUID(), account_id: randomUUID(), project_id: project };
    const deps = { config, db: t.db };
    const set = await setBudget(deps, { scope: 'project', scopeId: project }, { unit: 'money', period: 'day', limit: 0.01 }, 'person');
    expect(set).to.include({ unit: 'money', limit: 0.01, currency: 'USD', spent: 0 });

    const body = { model: 'm', messages: [{ role: 'user', content: 'hi' }], max_tokens: 100 };
    const p = promptEstimate(body);
    const first = await reserve(deps, caller, body);
    expect(first.outputAllowance, 'the money leaves room for all it asked').to.equal(100);
    // 1,000 in and 400 out at 3 and 15 per million: 9,000 micro-USD, 90% of 0.01 USD.
    await settle(t.db, first, { kind: 'usage', usage: { input_tokens: 1000, output_tokens: 400 } });
    expect(await getBudget(deps, { scope: 'project', scopeId: project })).to.include({ spent: 0.009, reserved: 0 });

    const second = await reserve(deps, caller, body);
    expect(second.outputAllowance, 'granted only the output the last 1,000 micro-USD pay for').to.equal(Math.floor((10_000 - 9_000 - 3 * p) / 15));
    await settle(t.db, second, { kind: 'usage', usage: { input_tokens: 500, output_tokens: second.outputAllowance! } });

    const refused = await reserve(deps, caller, body).catch((e: Error & { details?: Record<string, unknown> }) => e);
    expect((refused as { details: Record<string, unknown> }).details).to.deep.equal({
      code: 'project_budget_exceeded',
      budget: { scope: 'project', scope_id: project, unit: 'money', period: 'day', limit: 0.01, currency: 'USD' },
    });
    expect((refused as Error).message).to.include('0.01 USD per UTC day');
    await reserve(deps, caller, body).catch(() => null); // refused again: still one BudgetRefused below

    const unpriced = await reserve(deps, caller, { ...body, model: 'free-for-all' }).catch((e: Error & { details?: unknown; code?: string }) => e);
    expect(unpriced).to.have.property('code', 'forbidden');
    expect((unpriced as { details: unknown }).details).to.deep.equal({ code: 'model_unpriced' });

    // The session's row counted the same calls in tokens.
    const session = await t.db.one<{ spent: number }>({ text: "SELECT spent::float8 AS spent FROM llm_ledger WHERE scope = 'session' AND scope_id = $1", values: [caller.session_id] });
    expect(session!.spent).to.equal(1400 + 500 + second.outputAllowance!);
    const events = await t.db.rows<{ type: string; data: Record<string, unknown> }>({ text: 'SELECT type, data FROM events WHERE stream_id = $1 ORDER BY global_position', values: [`budgets-${project}`] });
    expect(events.map((e) => [e.type, e.data.threshold ?? e.data.subject ?? null])).to.deep.equal([
      ['BudgetSet', null],
      ['BudgetThresholdCrossed', 80],
      ['BudgetThresholdCrossed', 100],
      ['BudgetRefused', 'model calls'],
    ]);
    expect(events[1]!.data).to.include({ unit: 'money', limit: 0.01, spent: 0.009, currency: 'USD' });

    // Raised: the next call goes through, held to the new room.
    await setBudget(deps, { scope: 'project', scopeId: project }, { unit: 'money', period: 'day', limit: 1 }, 'person');
    expect((await reserve(deps, caller, body)).outputAllowance).to.equal(100);
  });
});
