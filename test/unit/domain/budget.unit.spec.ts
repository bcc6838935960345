import { expect } from 'chai';
import { budgetExceeded, costOn, fromWire, inForce, isBudgetRefusal, periodStart, toWire, type Budget } from '../../../domain/budget/budget.js';

const budget = (over: Partial<Budget> = {}): Budget => ({ scope: 'project', scope_id: 'p1', unit: 'tokens', period: 'day', amount: 1000, currency: null, set_by: 'u', set_at: new Date(0), ...over });

describe('budgets a person sets (domain)', () => {
  it('periods are the UTC day and the UTC month, whatever the local hour', () => {
    const at = new Date('2026-03-31T23:59:59.999Z');
    expect(periodStart('day', at).toISOString()).to.equal('2026-03-31T00:00:00.000Z');
    expect(periodStart('month', at).toISOString()).to.equal('2026-03-01T00:00:00.000Z');
    expect(periodStart('month', new Date('2026-04-01T00:00:00.000Z')).toISOString()).to.equal('2026-04-01T00:00:00.000Z');
  });

  it("the limit in force is the smaller of the person's and the operator's cap (0: none)", () => {
    const now = new Date('2026-01-02T03:04:05Z');
    expect(inForce(budget(), 0, now)).to.include({ limit: 1000, measure: 'tokens/day' });
    expect(inForce(budget(), 400, now)).to.include({ limit: 400 });
    expect(inForce(budget({ unit: 'money', period: 'month', currency: 'EUR' }), 5000, now)).to.include({ limit: 1000, measure: 'money/month' });
  });

  it('money is micro-units at the price per million tokens, rounded up; an unpriced call costs no money; tokens are tokens', () => {
    const price = { input: 0.15, output: 0.6, currency: 'USD' };
    expect(costOn('money', price, 1000, 100)).to.equal(Math.ceil(150 + 60));
    expect(costOn('money', price, 1, 1)).to.equal(1);
    expect(costOn('money', null, 1000, 100)).to.equal(0);
    expect(costOn('tokens', price, 1000, 100)).to.equal(1100);
    expect(toWire('money', fromWire('money', 12.345678))).to.equal(12.345678);
    expect(fromWire('tokens', 42)).to.equal(42);
  });

  it('the refusal names the budget, is 429 without retry_after, and is told apart from other 429s', () => {
    const b = inForce(budget({ unit: 'money', amount: 25_000_000, currency: 'USD', period: 'month' }), 0, new Date());
    const err = budgetExceeded(b, 'web');
    expect(err.code).to.equal('rate_limited');
    expect(err.reason).to.equal('Project budget exceeded');
    expect(err.message).to.include("The project 'web' has spent its model budget (25 USD per UTC month");
    expect(err.details).to.deep.equal({ code: 'project_budget_exceeded', budget: { scope: 'project', scope_id: 'p1', unit: 'money', period: 'month', limit: 25, currency: 'USD' } });
    expect(err.details).to.not.have.property('retry_after');
    expect(isBudgetRefusal(err)).to.equal(true);
    expect(budgetExceeded({ ...b, scope: 'account' }, 'acme', 'held').details.code).to.equal('account_budget_exceeded');
    expect(isBudgetRefusal(new Error('x'))).to.equal(false);
  });
});
