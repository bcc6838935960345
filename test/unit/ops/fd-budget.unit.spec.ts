import { expect } from 'chai';
import { createFdBudget, defaultFdReserve } from '../../../lib/fd-budget.js';
import { readHardLimit, readNofileLimit } from '../../../lib/proc.js';
import { loadConfig } from '../../../infra/config.js';
import { cappedResources, limitedLaunch, sandboxCapsOf } from '../../../infra/sandbox/limits.js';
import { createGatewayLimits } from '../../../ops/wiring/gateway-limits.js';
import { which } from '../../../infra/sandbox/provider-util.js';

describe('the descriptor budget and per-sandbox gateway limits', () => {
  it('reads RLIMIT_NOFILE from /proc/self/limits (soft), and the reserve is a quarter, at least 256, at most half', () => {
    expect(readNofileLimit('Limit Soft Hard Units\nMax open files            1024                 4096                 files\n')).to.equal(1024);
    expect(readNofileLimit('Max open files unlimited unlimited files\n')).to.equal(Number.MAX_SAFE_INTEGER);
    expect(readNofileLimit()).to.be.a('number').above(0);
    expect(readHardLimit('Max open files')).to.be.at.least(readNofileLimit()!);
    expect(defaultFdReserve(20_000)).to.equal(5000);
    expect(defaultFdReserve(1024)).to.equal(256);
    expect(defaultFdReserve(320)).to.equal(160);
  });

  it('admits up to limit minus reserve, counting admissions between reads of the real count, and refuses past it', () => {
    let real = 100;
    let t = 0;
    const b = createFdBudget({ limit: 400, reserve: 100, count: () => real, sampleMs: 50, now: () => t });
    let admitted = 0;
    while (b.admit()) admitted++;
    expect(admitted).to.equal(199); // 100 open + 199 = 299, below the line of 400 - 100
    expect(b.room()).to.equal(1);
    expect(b.admit()).to.equal(false);
    // Descriptors closed show at the next read, not before.
    real = 150;
    expect(b.admit()).to.equal(false);
    t = 50;
    expect(b.admit()).to.equal(true);
    expect(b.open()).to.equal(151);
    expect(b.room()).to.equal(149);
  });

  it("a sandbox's requests: rate and in-flight caps are its own; the descriptor budget refuses with 503", () => {
    let t = 0;
    let fdsLeft = 1000;
    const fds = { limit: 2000, reserve: 1000, open: () => 0, admit: (n = 1) => (fdsLeft -= n) >= 0, room: () => fdsLeft };
    const l = createGatewayLimits({ maxConnections: 10, maxRequests: 3, ratePerSecond: 5, fds }, () => t);
    const held = [l.request('a'), l.request('a'), l.request('a')];
    expect(held.every((h) => h.ok)).to.equal(true);
    const over = l.request('a');
    expect(over).to.deep.include({ ok: false, status: 429 });
    expect(l.request('b').ok, 'another sandbox is not affected').to.equal(true);
    for (const h of held) if (h.ok) h.release();
    expect(l.inFlight('a')).to.equal(0);
    // The bucket (2 x 5 deep): a has spent 3 (the refusal cost nothing), 7 more go, then 429 until it refills.
    const burst = Array.from({ length: 7 }, () => {
      const r = l.request('a');
      if (r.ok) r.release();
      return r;
    });
    expect(burst.every((r) => r.ok)).to.equal(true);
    const limited = l.request('a');
    expect(limited.ok).to.equal(false);
    if (!limited.ok) expect(limited.retryAfter).to.be.at.least(1);
    t += 1000;
    expect(l.request('a').ok, 'refilled after a second').to.equal(true);
    fdsLeft = 0;
    expect(l.request('c')).to.deep.include({ ok: false, status: 503 });
    expect(l.connection()).to.equal(false);
  });

  it('SVC_SANDBOX_MAX_* and SVC_FD_RESERVE are validated at start, each bad value named; the caps bound the manifest and are its default', () => {
    const c = loadConfig({});
    expect([c.SVC_SANDBOX_MAX_CONNECTIONS, c.SVC_SANDBOX_MAX_REQUESTS, c.SVC_SANDBOX_MAX_REQUEST_RATE, c.SVC_FD_RESERVE]).to.deep.equal([128, 16, 20, undefined]);
    for (const [k, v] of [['SVC_SANDBOX_MAX_CONNECTIONS', '0'], ['SVC_SANDBOX_MAX_REQUESTS', 'many'], ['SVC_SANDBOX_MAX_REQUEST_RATE', '-1'], ['SVC_FD_RESERVE', '-5'], ['SVC_SANDBOX_MAX_MEMORY_MB', '10'], ['SVC_SANDBOX_MAX_CPUS', '0'], ['SVC_SANDBOX_MAX_PIDS', '2'], ['SVC_SANDBOX_MAX_NOFILE', '1.5']] as const) {
      expect(() => loadConfig({ [k]: v }), `${k}=${v}`).to.throw(k);
    }
    const caps = sandboxCapsOf(loadConfig({ SVC_SANDBOX_MAX_MEMORY_MB: '1024', SVC_SANDBOX_MAX_CPUS: '1' }));
    expect(cappedResources({ resources: { memoryMb: 8192, cpus: 4 } }, caps)).to.deep.equal({ memoryMb: 1024, cpus: 1 });
    expect(cappedResources({ resources: { memoryMb: 256 } }, caps)).to.deep.equal({ memoryMb: 256, cpus: 1 });
    expect(cappedResources({}, caps)).to.deep.equal({ memoryMb: 1024, cpus: 1 });
    // The launch: prlimit, then nice, then the command, its pid and descriptors kept (each execs the next).
    const l = limitedLaunch('/usr/bin/bwrap', ['--x'], { nofile: 256, nproc: 512 }, { nice: true, prlimit: '/usr/bin/prlimit' });
    // nice by its resolved path where it is installed; without it the sandbox starts un-niced.
    const nice = which('nice');
    const niced = nice ? [nice, '-n', '19'] : [];
    expect(l).to.deep.equal({ file: '/usr/bin/prlimit', args: ['--nofile=256:256', '--nproc=512:512', '--', ...niced, '/usr/bin/bwrap', '--x'] });
  });
});
