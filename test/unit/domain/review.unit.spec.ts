import { expect } from 'chai';
import { commentableLines, decide, evolve, type ChangeRequestCommand, type ChangeRequestEvent, type CrState } from '../../../domain/change-request/index.js';
import { agentActionOf, assertMay } from '../../../services/tokens/agent-policy.js';
import type { Principal } from '../../../services/tokens/service.js';
import { actor, at, meta, specFor } from '../../support/decider.js';

const given = specFor<CrState, ChangeRequestEvent, ChangeRequestCommand>({ decide, evolve, initial: null });
const sha = (c: string) => c.repeat(40);
const opened: ChangeRequestEvent = {
  type: 'ChangeRequestOpened',
  data: {
    cr_id: '00000000-0000-4000-8000-000000000001', account_id: '00000000-0000-4000-8000-000000000002', project_id: '00000000-0000-4000-8000-000000000003',
    number: 4, title: 'T', description: '', base_ref: 'main', head_ref: 's-1', head_commit_sha: sha('a'), base_commit_sha: sha('b'),
    origin_session_id: 's-1', metadata: {}, created_by: actor, created_at: '2026-01-01T00:00:00.000Z',
  },
};
const closed: ChangeRequestEvent = { type: 'ChangeRequestClosed', data: { closed_by: actor, closed_at: at } };
const cid = '00000000-0000-4000-8000-0000000000c1';
const comment = (body: string): ChangeRequestCommand => ({
  type: 'CommentOnChangeRequest',
  data: { comment_id: cid, body, commit_sha: sha('a'), path: 'a.txt', line: 2, side: 'RIGHT', head_sha: sha('a'), author: { kind: 'user', user_id: actor, session_id: null }, answers_round: null },
  meta,
});

describe('review on the CR decider', () => {
  it('a comment is an event on the CR stream that leaves the CR row unchanged', () => {
    given([opened]).when(comment('why?')).then((events) => {
      expect(events).to.have.length(1);
      expect(events[0]).to.deep.include({ type: 'ChangeRequestCommented' });
      expect((events[0]!.data as { commented_at: string }).commented_at).to.equal(at);
      const before = evolve(null, opened);
      expect(evolve(before, events[0]!)).to.deep.equal(before);
    });
  });
  it('refuses an empty body (400) and a comment on no CR (404)', () => {
    given([opened]).when(comment('  \n ')).thenThrows('validation');
    given([]).when(comment('x')).thenThrows('not_found');
  });
  it('resolving is idempotent: the same state appends nothing', () => {
    given([opened]).when({ type: 'SetCommentResolved', data: { comment_id: cid, resolved: true, current: true }, meta }).then([]);
    given([opened]).when({ type: 'SetCommentResolved', data: { comment_id: cid, resolved: true, current: false }, meta }).then([
      { type: 'ChangeRequestCommentResolved', data: { comment_id: cid, resolved_by: actor, resolved_at: at } },
    ]);
    given([opened]).when({ type: 'SetCommentResolved', data: { comment_id: cid, resolved: false, current: true }, meta }).then([
      { type: 'ChangeRequestCommentUnresolved', data: { comment_id: cid, unresolved_by: actor, unresolved_at: at } },
    ]);
  });
  it('only an open CR is sent to its agent (409 otherwise)', () => {
    const send: ChangeRequestCommand = { type: 'SendChangeRequestToAgent', data: { round: 1, session_id: 's-1', comment_ids: [cid], items: [{ kind: 'comment', ref: cid }], head_sha: sha('a'), automatic: false, delivery: 'prompted' }, meta };
    given([opened]).when(send).then((events) => expect(events[0]!.type).to.equal('ChangeRequestSentToAgent'));
    given([opened, closed]).when(send).thenThrows('conflict');
  });
});

describe('commentable lines of a patch', () => {
  const patch = [
    'diff --git a/a.txt b/a.txt', '--- a/a.txt', '+++ b/a.txt', '@@ -1,3 +1,3 @@', ' one', '-two', '+2', ' three',
    'diff --git a/new.txt b/new.txt', 'new file mode 100644', '--- /dev/null', '+++ b/new.txt', '@@ -0,0 +1,2 @@', '+x', '+y', '',
  ].join('\n');
  it('gives the old side (deleted and context lines) and the new side (added and context lines) per file', () => {
    const m = commentableLines(patch);
    expect([...m.get('a.txt')!.left]).to.deep.equal([1, 2, 3]);
    expect([...m.get('a.txt')!.right]).to.deep.equal([1, 2, 3]);
    expect([...m.get('new.txt')!.right]).to.deep.equal([1, 2]);
    expect([...m.get('new.txt')!.left]).to.deep.equal([]);
  });
});

describe('agent policy: review routes', () => {
  const agent = { grade: 'agent', session_id: 's-1', user_id: actor } as Principal;
  const person = { grade: 'person', session_id: null, user_id: actor } as Principal;
  it('an agent comments (the route checks the CR); resolving, marking reviewed and sending to an agent are a person’s', () => {
    expect(agentActionOf('POST', '/projects/p/change-requests/4/comments')).to.equal('route-checks');
    for (const [m, path] of [['PATCH', '/projects/p/change-requests/4/comments/abc'], ['POST', '/projects/p/change-requests/4/send-to-agent'], ['POST', '/projects/p/change-requests/4/reviewed']] as const) {
      const action = agentActionOf(m, path);
      expect(action, path).to.deep.equal({ kind: 'cr.review' });
      expect(() => assertMay(agent, action as { kind: 'cr.review' })).to.throw(/cannot resolve/);
      expect(() => assertMay(person, action as { kind: 'cr.review' })).to.not.throw();
    }
    expect(() => assertMay(agent, { kind: 'cr.comment', cr: { head_ref: 's-1', origin_session_id: 's-1' } })).to.not.throw();
    expect(() => assertMay(agent, { kind: 'cr.comment', cr: { head_ref: 's-2', origin_session_id: 's-2' } })).to.throw(/own session/);
  });
});
