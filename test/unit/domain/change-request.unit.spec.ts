import { expect } from 'chai';
import {
  decide,
  evolve,
  type ChangeRequestCommand,
  type ChangeRequestEvent,
  type CrState,
} from '../../../domain/change-request/index.js';
import { actor, at, meta, specFor } from '../../support/decider.js';

const given = specFor<CrState, ChangeRequestEvent, ChangeRequestCommand>({ decide, evolve, initial: null });

const sha = (c: string) => c.repeat(40);

const openData = {
  cr_id: '00000000-0000-4000-8000-000000000001',
  account_id: '00000000-0000-4000-8000-000000000002',
  project_id: '00000000-0000-4000-8000-000000000003',
  number: 7,
  title: 'Add the thing',
  description: '',
  base_ref: 'main',
  head_ref: 'session-1',
  head_commit_sha: sha('a'),
  base_commit_sha: sha('b'),
  origin_session_id: null,
  metadata: {},
};
const opened: ChangeRequestEvent = {
  type: 'ChangeRequestOpened',
  data: { ...openData, created_by: actor, created_at: '2026-01-01T00:00:00.000Z' },
};
const merged: ChangeRequestEvent = {
  type: 'ChangeRequestMerged',
  data: { merged_by: actor, merged_at: at, strategy: 'fast-forward', base_commit_sha: sha('b'), head_commit_sha: sha('a'), merge_commit_sha: sha('a') },
};
const closed: ChangeRequestEvent = { type: 'ChangeRequestClosed', data: { closed_by: actor, closed_at: at } };
const reopened: ChangeRequestEvent = { type: 'ChangeRequestReopened', data: { reopened_by: actor, reopened_at: at } };

const open = (over: Partial<typeof openData> = {}): ChangeRequestCommand => ({ type: 'OpenChangeRequest', data: { ...openData, ...over }, meta });
const merge: ChangeRequestCommand = {
  type: 'MergeChangeRequest',
  data: { strategy: 'merge-commit', base_commit_sha: sha('b'), head_commit_sha: sha('a'), merge_commit_sha: sha('c') },
  meta,
};
const close: ChangeRequestCommand = { type: 'CloseChangeRequest', meta };
const reopen: ChangeRequestCommand = { type: 'ReopenChangeRequest', meta };
const refresh = (head: string, base: string): ChangeRequestCommand => ({
  type: 'RefreshChangeRequest',
  data: { head_commit_sha: head, base_commit_sha: base },
  meta,
});

describe('change request decider (the spec state table)', () => {
  describe('(none) --create-->', () => {
    it('opens with the anchored tips, the creator and the command clock', () =>
      given([]).when(open()).then([{ type: 'ChangeRequestOpened', data: { ...openData, created_by: actor, created_at: at } }]));
    it('refuses an empty title (400)', () => given([]).when(open({ title: '   ' })).thenThrows('validation', /title/));
    it('refuses a missing head_ref (400)', () => given([]).when(open({ head_ref: '' })).thenThrows('validation', /head_ref is required/));
    it('refuses head_ref equal to base_ref (400)', () =>
      given([]).when(open({ head_ref: 'main' })).thenThrows('validation', /must differ/));
    it('refuses opening a stream that exists', () => given([opened]).when(open()).thenThrows('conflict'));
    it('trims the title', () =>
      given([]).when(open({ title: '  Fix  ' })).then((events) => expect((events[0]!.data as { title: string }).title).to.equal('Fix')));
  });

  describe('open', () => {
    it('--merge--> merged, capturing SHAs, merged_by and merged_at', () =>
      given([opened]).when(merge).then([{ type: 'ChangeRequestMerged', data: { ...merge.data, merged_by: actor, merged_at: at } } as ChangeRequestEvent]));
    it('--close--> closed with closed_at and closed_by', () => given([opened]).when(close).then([closed]));
    it('--reopen--> refused with 409 (reopen requires closed)', () => given([opened]).when(reopen).thenThrows('conflict', /^Change request #7 is already open\.$/));
    it('--refresh with new tips--> Refreshed', () =>
      given([opened]).when(refresh(sha('d'), sha('b'))).then([
        { type: 'ChangeRequestRefreshed', data: { head_commit_sha: sha('d'), base_commit_sha: sha('b'), refreshed_at: at } },
      ]));
    it('--refresh with unchanged tips--> nothing', () => given([opened]).when(refresh(sha('a'), sha('b'))).then([]));
  });

  describe('merged is terminal', () => {
    it('--merge--> refused with 409: already merged', () =>
      given([opened, merged]).when(merge).thenThrows('conflict', /^Change request #7 is already merged\.$/));
    for (const [name, cmd] of [['close', close], ['reopen', reopen]] as const) {
      it(`--${name}--> refused with 409: merged is final`, () =>
        given([opened, merged]).when(cmd).thenThrows('conflict', new RegExp(`^Cannot ${name} change request #7: it is merged; merged is final\\.$`)));
    }
    it('--refresh--> nothing (merged CRs keep the SHAs captured at merge)', () =>
      given([opened, merged]).when(refresh(sha('e'), sha('f'))).then([]));
  });

  describe('closed', () => {
    it('--reopen--> open', () => given([opened, closed]).when(reopen).then([reopened]));
    it('--merge--> refused with 409 (merge requires open)', () => given([opened, closed]).when(merge).thenThrows('conflict', /^Cannot merge change request #7: it is closed; reopen it first\.$/));
    it('--close--> refused with 409: already closed (no "reopen it first")', () =>
      given([opened, closed]).when(close).thenThrows('conflict', /^Change request #7 is already closed\.$/));
    it('--refresh--> nothing until reopened', () => given([opened, closed]).when(refresh(sha('e'), sha('f'))).then([]));
    it('reopened CRs can be merged', () => given([opened, closed, reopened]).when(merge).then((e) => expect(e[0]!.type).to.equal('ChangeRequestMerged')));
  });

  describe('edit', () => {
    const edit = (data: { title?: string; description?: string }): ChangeRequestCommand => ({ type: 'EditChangeRequest', data, meta });
    it('records only what changed', () =>
      given([opened]).when(edit({ title: 'Add the thing', description: 'why' })).then([
        { type: 'ChangeRequestEdited', data: { description: 'why', edited_by: actor, edited_at: at } },
      ]));
    it('records nothing when nothing changed', () => given([opened]).when(edit({ title: 'Add the thing' })).then([]));
    it('refuses an empty title', () => given([opened]).when(edit({ title: '' })).thenThrows('validation'));
    it('on a CR that does not exist: 404', () => given([]).when(edit({ title: 'x' })).thenThrows('not_found'));
  });

  describe('evolve', () => {
    it('reopen clears closed_at and closed_by', () => {
      const s = [opened, closed, reopened].reduce(evolve, null as CrState)!;
      expect(s.status).to.equal('open');
      expect(s.closed_at).to.equal(null);
      expect(s.closed_by).to.equal(null);
    });
    it('merge captures base, head and merge SHAs and moves updated_at', () => {
      const s = [opened, merged].reduce(evolve, null as CrState)!;
      expect(s).to.include({ status: 'merged', merge_commit_sha: sha('a'), base_commit_sha: sha('b'), merged_by: actor, updated_at: at });
    });
  });
});
