import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { loadConfig, type Config } from '../../../infra/config.js';
import { createDb, type Db } from '../../../infra/db/db.js';
import { silentLogger } from '../../../lib/logger.js';
import { budgetedBody, EXPIRY_GRACE_MS, expireOrphans, reserve, settle, promptEstimate, type Reservation } from '../../../services/llm/ledger.js';
import { startLedgerSweep } from '../../../workers/llm-ledger.js';
import { createTestDb, type TestDb } from '../../support/db.js';
import { until } from '../../support/wait.js';

/**
 * The model ledger (services/llm/ledger.ts) against PostgreSQL, as API replicas and a
 * dying process would use it: reservations a dead process left hold the budget until the
 * upstream timeout, then are charged in full (by the call path and the workers' sweep);
 * two replicas (two pools) reserving at once never pass a limit between them.
 */
const body = { model: 'm', stream: true, messages: [{ role: 'user', content: 'hi' }] };
const configOf = (env: Record<string, string>): Config => loadConfig({ LOG_LEVEL: 'silent', ...env });

const ledgerOf = (db: Db, scopeId: string) =>
  db.one<{ spent: number; reserved: number; in_flight: number }>({
    text: 'SELECT spent::float8 AS spent, reserved::float8 AS reserved, in_flight FROM llm_ledger WHERE scope_id = $1',
    values: [scopeId],
  });

describe('the model ledger', function () {
  this.timeout(60_000);
  let t: TestDb;
  beforeEach(async () => {
    t = await createTestDb();
  });
  afterEach(() => t.drop());

  it('a reservation whose process died holds the budget until the upstream timeout, then is charged in full', async () => {
    // (Expiry is the timeout plus a grace, in which a live process cuts its call and settles it itself.)
    const config = configOf({ SVC_LLM_SESSION_TOKEN_BUDGET: '100', SVC_LLM_UPSTREAM_TIMEOUT_MS: '60000' });
    const caller = { session_id: randomUUID(), account_id: randomUUID() };
    const t0 = new Date('2026-01-01T00:00:00Z');
    // The dying process: it asked for no max_tokens, so it holds the whole budget; it never settles.
    const orphan = await reserve({ config, db: t.db }, caller, body, { now: () => t0 });
    expect(orphan.amount).to.equal(100);
    expect(orphan.outputAllowance).to.equal(100 - promptEstimate(body));
    expect(budgetedBody(body, orphan)).to.deep.equal({ ...body, max_tokens: 100 - promptEstimate(body) });

    // Another call before the timeout: held (it waits, sweeping once, finds nothing expired), then 429.
    const expiry = t0.getTime() + 60_000 + EXPIRY_GRACE_MS;
    const held = await reserve({ config, db: t.db }, caller, body, { now: () => new Date(expiry - 1), waitMs: 200 }).catch((e: Error & { details?: unknown }) => e);
    expect(held).to.be.instanceOf(Error).and.have.property('details').that.deep.equals({ code: 'session_budget_exceeded' });
    expect((held as Error).message).to.include('held by its calls in flight');
    expect(await ledgerOf(t.db, caller.session_id)).to.deep.equal({ spent: 0, reserved: 100, in_flight: 1 });

    expect(await expireOrphans(t.db, new Date(expiry - 1))).to.equal(0);
    expect(await expireOrphans(t.db, new Date(expiry))).to.equal(1);
    expect(await ledgerOf(t.db, caller.session_id), 'charged in full').to.deep.equal({ spent: 100, reserved: 0, in_flight: 0 });
    // The process comes back and settles late: nothing changes (it was charged already).
    expect(await settle(t.db, orphan, { kind: 'usage', usage: { input_tokens: 1, output_tokens: 1 } })).to.equal(0);
    expect(await ledgerOf(t.db, caller.session_id)).to.deep.equal({ spent: 100, reserved: 0, in_flight: 0 });
    // Spent now, not held: refused at once.
    const spent = await reserve({ config, db: t.db }, caller, body, { waitMs: 60_000 }).catch((e: Error) => e);
    expect((spent as Error).message).to.include('is spent');
  });

  it("the workers' sweep expires orphaned reservations at the upstream timeout", async () => {
    const config = configOf({ SVC_LLM_ACCOUNT_TOKEN_BUDGET: '1000', SVC_LLM_UPSTREAM_TIMEOUT_MS: '400' });
    const caller = { session_id: randomUUID(), account_id: randomUUID() };
    const r = await reserve({ config, db: t.db }, caller, { ...body, max_tokens: 50 });
    const before = await ledgerOf(t.db, caller.account_id);
    expect(before).to.deep.equal({ spent: 0, reserved: r.amount, in_flight: 0 });
    // The worker's clock, past the timeout and its grace.
    const sweep = startLedgerSweep({ db: t.db, logger: silentLogger, upstreamTimeoutMs: config.SVC_LLM_UPSTREAM_TIMEOUT_MS }, { now: () => new Date(Date.now() + 400 + EXPIRY_GRACE_MS) });
    try {
      await until(async () => (await ledgerOf(t.db, caller.session_id))!.in_flight === 0, 'the orphan expired');
    } finally {
      await sweep.stop();
    }
    expect(await ledgerOf(t.db, caller.account_id)).to.deep.equal({ spent: r.amount, reserved: 0, in_flight: 0 });
  });

  it('two API replicas reserving at once never pass a limit between them; settled calls give back what they did not use', async () => {
    const config = configOf({ SVC_LLM_ACCOUNT_TOKEN_BUDGET: '250', SVC_LLM_SESSION_CONCURRENCY: '64' });
    const account = randomUUID();
    const sessions = [randomUUID(), randomUUID()];
    const replicas = [createDb(t.url, { max: 5 }), createDb(t.url, { max: 5 })];
    try {
      const attempts = await Promise.all(
        Array.from({ length: 60 }, (_, i) =>
          reserve({ config, db: replicas[i % 2]! }, { session_id: sessions[(i >> 1) % 2]!, account_id: account }, { ...body, max_tokens: 10 }, { waitMs: 0 }).catch((e: Error) => e),
        ),
      );
      const granted = attempts.filter((a): a is Reservation => !(a instanceof Error));
      const total = granted.reduce((n, r) => n + r.amount, 0);
      expect(granted.length).to.be.at.least(1);
      expect(total).to.be.at.most(250);
      expect((await ledgerOf(t.db, account))!.reserved).to.equal(total);
      for (const e of attempts.filter((a): a is Error => a instanceof Error)) expect(e).to.have.property('details').that.deep.includes({ code: 'account_budget_exceeded' });
      // Each used one token: the rest comes back, and the account's spend is what they used.
      for (const r of granted) await settle(replicas[0]!, r, { kind: 'usage', usage: { input_tokens: 0, output_tokens: 1 } });
      expect(await ledgerOf(t.db, account)).to.deep.equal({ spent: granted.length, reserved: 0, in_flight: 0 });
      for (const s of sessions) expect((await ledgerOf(t.db, s))!.in_flight).to.equal(0);
    } finally {
      for (const d of replicas) await d.close();
    }
  });

  it('a stream that ended without usage is charged the prompt estimate plus what streamed, never zero, never past its max_tokens', async () => {
    const config = configOf({ SVC_LLM_SESSION_TOKEN_BUDGET: '1000' });
    const caller = { session_id: randomUUID(), account_id: randomUUID() };
    const cancelled = await reserve({ config, db: t.db }, caller, { ...body, max_tokens: 5 });
    await settle(t.db, cancelled, { kind: 'unreported', outputChars: 0 });
    expect((await ledgerOf(t.db, caller.session_id))!.spent, 'cancelled before any text: the prompt').to.equal(promptEstimate({ ...body, max_tokens: 5 }));
    const long = await reserve({ config, db: t.db }, caller, { ...body, max_tokens: 5 });
    await settle(t.db, long, { kind: 'unreported', outputChars: 10_000 });
    expect((await ledgerOf(t.db, caller.session_id))!.spent, 'at most the output it was allowed').to.equal(2 * promptEstimate({ ...body, max_tokens: 5 }) + 5);
    // A caller's max_completion_tokens is clamped in place (models that take only it refuse max_tokens).
    const r = await reserve({ config, db: t.db }, caller, { ...body, max_completion_tokens: 100_000, n: 2 });
    expect(budgetedBody({ ...body, max_completion_tokens: 100_000, n: 2 }, r)).to.deep.equal({ ...body, n: 2, max_completion_tokens: r.outputAllowance });
    expect(r.amount).to.equal(r.promptEstimate + 2 * r.outputAllowance!);
    expect((await ledgerOf(t.db, caller.session_id))!.spent + r.amount).to.be.at.most(1000);
  });
});
