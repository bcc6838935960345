import { expect } from 'chai';
import { eventTypes, mergeJobs } from '../../support/merges.js';
import { openDivergedCr, withProject } from '../../support/server.js';
import { until } from '../../support/wait.js';

/**
 * A merge requested from a process that works the merge queue runs in that process
 * (`Queue.run`: the job row and its claim committed together, no fetch, no NOTIFY hop).
 * It is still a durable job, recorded once (its crashes: merge-crash.int.spec.ts).
 */
describe('merges run in the process that took the request', function () {
  this.timeout(120_000);

  it('one durable job, completed once, its claim and attempt gone; a merge of the same CR at the same time merges once', () =>
    withProject({ slug: 'here' }, async (p) => {
      const { srv, repo, api, base } = p;
      const { cr, head } = await openDivergedCr(p, 'Here');
      const results = await Promise.all(Array.from({ length: 6 }, () => api.post(`${base}/${cr.number}/merge`, {})));
      const statuses = results.map((r) => r.status).sort();
      expect(statuses).to.deep.equal([200, 409, 409, 409, 409, 409]);
      const merged = results.find((r) => r.status === 200)!.body.change_request;
      expect(merged.status).to.equal('merged');
      expect(repo.tip('main')).to.equal(merged.merge_commit_sha);
      repo.git('fetch', '-q', 'origin');
      expect(repo.git('rev-parse', `${merged.merge_commit_sha}^2`)).to.equal(head);
      expect(await eventTypes(srv.db.db, cr.cr_id)).to.deep.equal(['ChangeRequestOpened', 'ChangeRequestMerged']);
      // The answer comes before the job's result is stored; it is stored all the same.
      await until(async () => (await mergeJobs(srv.db.db, cr.cr_id)).every((j) => j.state === 'completed'), 'the jobs completed');
      const jobs = await mergeJobs(srv.db.db, cr.cr_id);
      expect(jobs).to.have.length(6);
      expect(jobs.filter((j) => j.output?.ok === true)).to.have.length(1);
      expect(jobs.every((j) => j.retry_count === 0)).to.equal(true);
      await until(async () => (await srv.db.db.rows({ text: 'SELECT job_id FROM job_claims', values: [] })).length === 0, 'claims released');
      expect(await srv.db.db.rows({ text: 'SELECT cr_id FROM merge_attempts', values: [] })).to.deep.equal([]);
    }));
});
