import { expect } from 'chai';
import { MemoryQueue } from '../../support/memory-queue.js';

/** The in-memory queue keeps the port's promises (infra/queue.ts), so services take their production path on it. */
describe('test support: the in-memory queue', () => {
  it('run: a worked queue runs the job and hands back its output, with what `local` carried', async () => {
    const q = new MemoryQueue();
    q.work('echo', 1, async (data, job) => ({ ok: true, value: { data, local: job.local } }));
    const out = await q.run('echo', { n: 1 }, 1_000, { local: 'ctx' });
    expect(out).to.deep.equal({ ok: true, value: { data: { n: 1 }, local: 'ctx' } });
    await q.stop();
  });

  it('a job of a queue nobody works stays waiting (as on pg-boss), readable by name', async () => {
    const q = new MemoryQueue();
    const id = await q.enqueue('session.stop', { session_id: 's1' });
    expect(id).to.be.a('string').and.not.equal('');
    expect(q.sent('session.stop')).to.deep.equal([{ session_id: 's1' }]);
    expect(await q.waitFor('session.stop', id, 10)).to.equal(null);
    await q.stop();
  });

  it('a handler that throws is retried up to retryLimit, then the job fails with a typed output', async () => {
    const q = new MemoryQueue();
    let calls = 0;
    q.work('flaky', 1, async () => {
      calls++;
      if (calls < 3) throw new Error('not yet');
      return { ok: true, value: calls };
    });
    expect(await q.run('flaky', {}, 1_000)).to.deep.equal({ ok: true, value: 3 });
    q.work('broken', 1, async () => {
      throw new Error('always');
    });
    const out = await q.run('broken', {}, 1_000, { retryLimit: 1 });
    expect(out).to.include({ ok: false });
    await q.stop();
  });

  it('a singleton is accepted once per period; concurrency bounds the jobs running at once', async () => {
    const q = new MemoryQueue();
    expect(await q.enqueue('sweep', {}, { singleton: { key: 'k', seconds: 60 } })).to.not.equal('');
    expect(await q.enqueue('sweep', {}, { singleton: { key: 'k', seconds: 60 } })).to.equal('');
    let active = 0;
    let peak = 0;
    q.work('slow', 2, async () => {
      peak = Math.max(peak, ++active);
      await new Promise((r) => setImmediate(r));
      active--;
      return { ok: true, value: null };
    });
    await Promise.all(Array.from({ length: 6 }, () => q.run('slow', {}, 1_000)));
    expect(peak).to.equal(2);
    await q.stop();
    await q.ping().then(() => expect.fail('a stopped queue answers ping'), (err: Error) => expect(err.message).to.match(/stopped/));
  });
});
