import { expect } from 'chai';
import { parseManifest } from '../../../domain/manifest/parse.js';
import { decideCheckEvents, evolve, foldChecks, greenVerdict, parseChangeRequestEvent, type ChangeRequestEvent, type CheckEvent } from '../../../domain/change-request/index.js';
import { maskSecrets } from '../../../services/checks/log.js';

const A = 'a'.repeat(40);
const B = 'b'.repeat(40);
const C = 'c'.repeat(40);
const R1 = '11111111-1111-4111-8111-111111111111';
const R2 = '22222222-2222-4222-8222-222222222222';
const U = '33333333-3333-4333-8333-333333333333';
const T = '2026-11-25T12:00:00.000Z';

describe('checks in the manifest', () => {
  it('[[checks]] and [review] with their defaults', () => {
    const m = parseManifest('[[checks]]\nname = "test"\nrun = "npm test"\n\n[review]\nrequired_statuses = ["ci/e2e"]\n').manifest!;
    expect(m.checks).to.deep.equal([{ name: 'test', run: 'npm test', timeout_minutes: 15, secrets: [] }]);
    expect(m.review).to.deep.equal({ required_statuses: ['ci/e2e'], send_failures_to_agent: false, max_agent_rounds: 3 });
    expect(parseManifest('').manifest!.checks).to.deep.equal([]);
  });

  it('validation errors like the rest: empty run, duplicate name, bad secret name, a required status named like a check, a bad timeout', () => {
    const bad = (toml: string) => parseManifest(toml).errors.map((e) => `${e.path}: ${e.message}`);
    expect(bad('[[checks]]\nname = "t"\nrun = " "\n')).to.deep.equal(['checks.0.run: must not be empty']);
    expect(bad('[[checks]]\nname = "t"\nrun = "x"\n[[checks]]\nname = "t"\nrun = "y"\n')).to.deep.equal(["checks.1: duplicate check name 't'"]);
    expect(bad('[[checks]]\nname = "t"\nrun = "x"\nsecrets = ["lower"]\n')[0]).to.match(/^checks\.0\.secrets\.0: /);
    expect(bad('[[checks]]\nname = "t"\nrun = "x"\n[review]\nrequired_statuses = ["t"]\n')).to.deep.equal(["review.required_statuses.0: 't' is a check's name; checks are required already"]);
    expect(bad('[[checks]]\nname = "t"\nrun = "x"\ntimeout_minutes = 0\n')[0]).to.match(/^checks\.0\.timeout_minutes: /);
    expect(bad('[[checks]]\nname = "-x y"\nrun = "x"\n')[0]).to.match(/^checks\.0\.name: /);
    expect(parseManifest('[[checks]]\nname = "t"\nrun = "x"\nextra = 1\n[review]\nmore = 2\n').warnings.map((w) => w.path)).to.deep.equal(['review.more', 'checks.0.extra']);
  });
});

describe('check events and their fold (pure)', () => {
  const queued = (run_id: string, base: string, head: string): ChangeRequestEvent => ({ type: 'CheckQueued', data: { run_id, name: 'test', base_sha: base, head_sha: head, merge_sha: head, queued_at: T } });

  it('runs move queued -> running -> a result; a result after cancellation changes nothing', () => {
    const s = foldChecks([
      queued(R1, B, A),
      { type: 'CheckStarted', data: { run_id: R1, started_at: T } },
      { type: 'CheckCancelled', data: { run_id: R1, cancelled_at: T, reason: 'superseded' } },
      { type: 'CheckPassed', data: { run_id: R1, finished_at: T } },
    ]);
    expect(s.runs[0]).to.include({ status: 'cancelled', reason: 'superseded' });
  });

  it('green only on exactly the pair, red on a failure, waiting on a missing status', () => {
    const s = foldChecks([queued(R1, B, A), { type: 'CheckPassed', data: { run_id: R1, finished_at: T } }, queued(R2, C, A), { type: 'CheckFailed', data: { run_id: R2, finished_at: T, exit_code: 1, reason: 'exit' } }]);
    expect(greenVerdict(s, { base: B, head: A }, ['test'], [], new Map())).to.deep.equal({ verdict: 'green' });
    expect(greenVerdict(s, { base: C, head: A }, ['test'], [], new Map())).to.deep.equal({ verdict: 'red', reason: 'check_failed', context: 'test' });
    expect(greenVerdict(s, { base: A, head: A }, ['test'], [], new Map())).to.deep.equal({ verdict: 'wait' });
    expect(greenVerdict(s, { base: B, head: A }, ['test'], ['ci'], new Map())).to.deep.equal({ verdict: 'wait' });
    expect(greenVerdict(s, { base: B, head: A }, ['test'], ['ci'], new Map([['ci', 'error']]))).to.deep.equal({ verdict: 'red', reason: 'status_failed', context: 'ci' });
  });

  it('merge when green: requested, then cancelled or merged; the CR itself is untouched by every check event', () => {
    const opened = parseChangeRequestEvent({
      type: 'ChangeRequestOpened',
      data: { cr_id: R1, account_id: U, project_id: U, number: 1, title: 't', description: '', base_ref: 'main', head_ref: 'x', head_commit_sha: A, base_commit_sha: B, origin_session_id: null, created_by: U, metadata: {}, created_at: T },
    });
    const cr = evolve(null, opened);
    const ask: ChangeRequestEvent = { type: 'ChangeRequestAutoMergeRequested', data: { requested_by: U, head_sha: A, requested_at: T } };
    expect(evolve(cr, ask)).to.equal(cr);
    expect(foldChecks([ask]).auto_merge).to.include({ status: 'pending', head_sha: A });
    expect(foldChecks([ask, { type: 'ChangeRequestAutoMergeCancelled', data: { head_sha: A, cancelled_at: T, reason: 'check_failed', context: 'test' } }]).auto_merge).to.include({ status: 'cancelled', reason: 'check_failed: test' });
    // New runs and requests only on an open CR.
    const closed = { ...cr!, status: 'closed' as const };
    const meta = { actor: U, now: new Date(T) };
    const record = (events: CheckEvent[]) => ({ type: 'RecordCheckEvents' as const, events, meta });
    const running = foldChecks([queued(R1, B, A), { type: 'CheckStarted', data: { run_id: R1, started_at: T } }]);
    expect(() => decideCheckEvents(record([ask]), { cr: closed, checks: running })).to.throw(/closed/);
    // Results of runs already queued land whatever the CR's fate.
    expect(decideCheckEvents(record([{ type: 'CheckPassed', data: { run_id: R1, finished_at: T } }]), { cr: closed, checks: running })).to.have.length(1);
  });

  it('the checks decider admits nothing unchecked: unknown runs, a second start, a second result', () => {
    const cr = evolve(null, parseChangeRequestEvent({
      type: 'ChangeRequestOpened',
      data: { cr_id: R1, account_id: U, project_id: U, number: 1, title: 't', description: '', base_ref: 'main', head_ref: 'x', head_commit_sha: A, base_commit_sha: B, origin_session_id: null, created_by: U, metadata: {}, created_at: T },
    }))!;
    const record = (events: CheckEvent[]) => ({ type: 'RecordCheckEvents' as const, events, meta: { actor: U, now: new Date(T) } });
    const none = foldChecks([]);
    expect(() => decideCheckEvents(record([{ type: 'CheckPassed', data: { run_id: R2, finished_at: T } }]), { cr, checks: none })).to.throw(/not found/i);
    expect(() => decideCheckEvents(record([{ type: 'CheckStarted', data: { run_id: R2, started_at: T } }]), { cr, checks: none })).to.throw(/not found/i);
    const q = queued(R1, B, A) as CheckEvent;
    expect(() => decideCheckEvents(record([q, q]), { cr, checks: none })).to.throw(/queued already/);
    const started = foldChecks([q, { type: 'CheckStarted', data: { run_id: R1, started_at: T } }]);
    expect(() => decideCheckEvents(record([{ type: 'CheckStarted', data: { run_id: R1, started_at: T } }]), { cr, checks: started })).to.throw(/running/);
    const passed = foldChecks([{ type: 'CheckPassed', data: { run_id: R1, finished_at: T } }], started);
    expect(decideCheckEvents(record([{ type: 'CheckErrored', data: { run_id: R1, finished_at: T, reason: 'late' } }]), { cr, checks: passed }), 'the first result stands').to.deep.equal([]);
    expect(decideCheckEvents(record([{ type: 'ChangeRequestAutoMergeCancelled', data: { head_sha: A, cancelled_at: T, reason: 'head_moved' } }]), { cr, checks: none }), 'nothing pending').to.deep.equal([]);
    expect(() => decideCheckEvents(record([q]), null)).to.throw(/not found/i);
  });

  it('stored events are validated on the way in', () => {
    expect(() => parseChangeRequestEvent({ type: 'CheckFailed', data: { run_id: R1, finished_at: T, exit_code: 1, reason: 'because' } })).to.throw();
  });
});

describe('log masking', () => {
  it('masks every known value, longest first; leaves short values alone', () => {
    expect(maskSecrets('k=sk-123456 and sk-123456789 and ab', ['sk-123456', 'sk-123456789', 'ab'])).to.equal('k=*** and *** and ab');
  });

  it('masks the base64, base64url, hex and URL-encoded forms of a secret, as a check prints them by accident', () => {
    const secret = 'p@ss w0rd/+?~é!'; // bytes whose encodings differ: '/', '+', spaces, non-ASCII
    const b = Buffer.from(secret);
    const printed = [
      `plain ${secret}`,
      `base64 ${b.toString('base64')}`,
      `base64-unpadded ${b.toString('base64').replace(/=+$/, '')}`,
      `base64-with-newline ${Buffer.from(`${secret}\n`).toString('base64')}`, // echo "$S" | base64
      `base64url ${b.toString('base64url')}`,
      `hex ${b.toString('hex')}`,
      `HEX ${b.toString('hex').toUpperCase()}`,
      `url ${encodeURIComponent(secret)}`,
      `url-lower ${encodeURIComponent(secret).replace(/%[0-9A-F]{2}/g, (e) => e.toLowerCase())}`,
      `form ${new URLSearchParams({ s: secret }).toString()}`,
    ].join('\n');
    const masked = maskSecrets(printed, [secret]);
    for (const line of masked.split('\n')) expect(line, line).to.include('***');
    const encodings = [b.toString('base64').slice(0, 12), b.toString('base64url').slice(0, 12), b.toString('hex').slice(0, 12), encodeURIComponent(secret).slice(0, 12)];
    for (const e of encodings) expect(masked, e).to.not.include(e);
    expect(masked).to.not.include(secret);
    // Ordinary text is left alone.
    expect(maskSecrets('nothing to hide here', [secret])).to.equal('nothing to hide here');
  });
});
