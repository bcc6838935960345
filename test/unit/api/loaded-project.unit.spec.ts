import { expect } from 'chai';
import type { ChangeRequest } from '../../../domain/change-request/index.js';
import type { ProjectRecord } from '../../../domain/project.js';
import type { Executor } from '../../../infra/db/db.js';
import { loadedCrOf, projectForCaller, type LoadedProject } from '../../../services/projects/access.js';

/**
 * The access rule on the project (and CR) `requireAuth` read with the token: the same
 * outcomes as the statement-per-step path, with no statement of its own, and a CR read with
 * a project served only with that project.
 */
describe('project access on what the authentication read', () => {
  const noDb: Executor = new Proxy({} as Executor, {
    get: () => () => {
      throw new Error('no statement may run: the project was read with the token');
    },
  });
  const project = (id: string, slug: string): ProjectRecord =>
    ({ project_id: id, account_id: 'acc', name: slug, slug, repo_url: null, repo_credentials_enc: null, default_branch: 'main', created_at: new Date(0) }) as ProjectRecord;
  const p1 = project('11111111-1111-4111-8111-111111111111', 'one');
  const p2 = project('22222222-2222-4222-8222-222222222222', 'two');
  const user = { user_id: 'u', project_id: null };
  const token = { user_id: 'u', project_id: p1.project_id };
  const loaded = (ref: string, p: ProjectRecord | null, member: boolean, cr?: LoadedProject['cr']): LoadedProject => ({ ref, project: p, member, ...(cr ? { cr } : {}) });
  const status = (p: Promise<unknown>) => p.then(() => 200, (e: { status?: number; code?: string }) => e.code);

  it('a user: their project when a member; 404 when not, or none', async () => {
    expect(await projectForCaller(noDb, user, 'one', loaded('one', p1, true))).to.equal(p1);
    expect(await status(projectForCaller(noDb, user, p1.project_id, loaded(p1.project_id, p1, false)))).to.equal('not_found');
    expect(await status(projectForCaller(noDb, user, 'nope', loaded('nope', null, false)))).to.equal('not_found');
  });

  it('a project token: its own project while its user is a member; 403 for another reference or a removed member', async () => {
    expect(await projectForCaller(noDb, token, p1.project_id, loaded(p1.project_id, p1, true))).to.equal(p1);
    expect(await status(projectForCaller(noDb, token, 'two', loaded('two', p1, true)))).to.equal('forbidden');
    expect(await status(projectForCaller(noDb, token, 'one', loaded('one', p1, false)))).to.equal('forbidden');
  });

  it('what was read for another reference is not used (the statement-per-step path answers)', async () => {
    const err = await projectForCaller(noDb, user, 'two', loaded('one', p1, true)).then(() => null, (e: Error) => e);
    expect(err?.message, 'it asked the database').to.match(/no statement may run/);
  });

  it('a CR read with the project is served only for that project and number', () => {
    const cr = { cr_id: 'c', project_id: p1.project_id, number: 1 } as ChangeRequest;
    const l = loaded('one', p1, true, { number: 1, cr });
    expect(loadedCrOf(l, p1, 1)).to.equal(cr);
    expect(loadedCrOf(l, p2, 1), 'another project').to.equal(undefined);
    expect(loadedCrOf(l, p1, 2), 'another number').to.equal(undefined);
    expect(loadedCrOf(loaded('one', p1, true, { number: 1, cr: null }), p1, 1), 'read, none: 404').to.equal(null);
    expect(loadedCrOf(loaded('one', p1, true, { number: 1, cr: { ...cr, project_id: p2.project_id } }), p1, 1), "another project's row").to.equal(undefined);
    expect(loadedCrOf(loaded('one', p1, true), p1, 1), 'not read').to.equal(undefined);
  });
});
