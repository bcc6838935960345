import type { MergeKind } from '../../../infra/git/port.js';
import type { RepoFixture } from './repo-fixture.js';

/**
 * The conformance cases: each builds `main` (base) and `feature` (head) in origin and
 * states what every engine and backend must report for them.
 */
export interface Scenario {
  name: string;
  build(fx: RepoFixture): Promise<void>;
  preview: {
    /** Which commit the merge base is: the base tip, the head tip, an older commit, or none. */
    mergeBase: 'base' | 'head' | 'older' | null;
    is_up_to_date: boolean;
    can_merge: boolean;
    can_fast_forward: boolean;
    conflicts: string[];
  };
  /** [path, status, additions, deletions, binary] in git's path order. */
  diff: Array<[string, 'added' | 'modified' | 'deleted', number, number, boolean]>;
  /** Lines the patch must contain. */
  patchHas?: string[];
  merge: MergeKind | 'merge_failed' | 'validation';
  /** File contents of the merged base (null: must not exist). */
  merged?: Record<string, string | null>;
}

const lines = (...xs: string[]) => xs.map((x) => `${x}\n`).join('');
const TEN = Array.from({ length: 10 }, (_, i) => `line ${i + 1}`);
const withLine = (i: number, text: string) => lines(...TEN.map((l, j) => (j === i ? text : l)));

/** Bytes git treats as binary (NUL inside). */
const bin = (seed: number) => Buffer.from([0, 1, 2, 0, ...Array.from({ length: 64 }, (_, i) => (i * 7 + seed) % 256)]);

async function base(fx: RepoFixture, files: Record<string, string | Buffer>) {
  await fx.commit('base', { 'README.md': '# fixture\n', ...files });
}

type Commit = Parameters<RepoFixture['commit']>;

/** `base` with `files`, then one commit on a new `feature` and one on `main`; both pushed. */
async function diverged(fx: RepoFixture, files: Record<string, string | Buffer>, feature: Commit, main: Commit) {
  await base(fx, files);
  await fx.switch('feature', true);
  await fx.commit(...feature);
  await fx.switch('main');
  await fx.commit(...main);
  await fx.push('main', 'feature');
}

export const scenarios: Scenario[] = [
  {
    name: 'fast-forward',
    async build(fx) {
      await base(fx, { 'a.txt': lines('one', 'two') });
      await fx.switch('feature', true);
      await fx.commit('feature 1', { 'a.txt': lines('one', 'TWO') });
      await fx.commit('feature 2', { 'b.txt': lines('new') });
      await fx.push('main', 'feature');
    },
    preview: { mergeBase: 'base', is_up_to_date: false, can_merge: true, can_fast_forward: true, conflicts: [] },
    diff: [
      ['a.txt', 'modified', 1, 1, false],
      ['b.txt', 'added', 1, 0, false],
    ],
    patchHas: ['-two', '+TWO', '+++ b/b.txt'],
    merge: 'fast-forward',
    merged: { 'a.txt': lines('one', 'TWO'), 'b.txt': lines('new') },
  },
  {
    name: 'diverged, clean',
    async build(fx) {
      await diverged(
        fx,
        { 'x.txt': lines('x'), 'y.txt': lines('y') },
        ['feature edits y', { 'y.txt': lines('y', 'from feature') }],
        ['main edits x', { 'x.txt': lines('x', 'from main') }],
      );
    },
    preview: { mergeBase: 'older', is_up_to_date: false, can_merge: true, can_fast_forward: false, conflicts: [] },
    diff: [['y.txt', 'modified', 1, 0, false]],
    patchHas: ['+from feature'],
    merge: 'merge-commit',
    merged: { 'x.txt': lines('x', 'from main'), 'y.txt': lines('y', 'from feature') },
  },
  {
    name: 'text conflict',
    async build(fx) {
      await diverged(
        fx,
        { 'f.txt': lines(...TEN) },
        ['feature line 5', { 'f.txt': withLine(4, 'feature') }],
        ['main line 5', { 'f.txt': withLine(4, 'main') }],
      );
    },
    preview: { mergeBase: 'older', is_up_to_date: false, can_merge: false, can_fast_forward: false, conflicts: ['f.txt'] },
    diff: [['f.txt', 'modified', 1, 1, false]],
    patchHas: ['-line 5', '+feature'],
    merge: 'merge_failed',
  },
  {
    name: 'binary conflict',
    async build(fx) {
      await diverged(
        fx,
        { 'img.bin': bin(1), 'ok.txt': lines('ok') },
        ['feature image', { 'img.bin': bin(2) }],
        ['main image', { 'img.bin': bin(3) }],
      );
    },
    preview: { mergeBase: 'older', is_up_to_date: false, can_merge: false, can_fast_forward: false, conflicts: ['img.bin'] },
    diff: [['img.bin', 'modified', 0, 0, true]],
    merge: 'merge_failed',
  },
  {
    name: 'modify/delete',
    async build(fx) {
      await diverged(
        fx,
        { 'd.txt': lines(...TEN), 'keep.txt': lines('keep') },
        ['feature edits d', { 'd.txt': withLine(2, 'edited') }],
        ['main deletes d', { 'd.txt': null }],
      );
    },
    preview: { mergeBase: 'older', is_up_to_date: false, can_merge: false, can_fast_forward: false, conflicts: ['d.txt'] },
    diff: [['d.txt', 'modified', 1, 1, false]],
    merge: 'merge_failed',
  },
  {
    name: 'add/add',
    async build(fx) {
      await diverged(
        fx,
        {},
        ['feature adds n', { 'n.txt': lines('feature version') }],
        ['main adds n', { 'n.txt': lines('main version') }],
      );
    },
    preview: { mergeBase: 'older', is_up_to_date: false, can_merge: false, can_fast_forward: false, conflicts: ['n.txt'] },
    diff: [['n.txt', 'added', 1, 0, false]],
    merge: 'merge_failed',
  },
  {
    name: 'rename/edit (head renames and edits, base edits elsewhere in the file)',
    async build(fx) {
      await base(fx, { 'r.txt': lines(...TEN) });
      await fx.switch('feature', true);
      await fx.mv('r.txt', 'docs/r2.txt');
      await fx.commit('feature renames r and edits line 9', { 'docs/r2.txt': withLine(8, 'feature line 9') });
      await fx.switch('main');
      await fx.commit('main edits line 2', { 'r.txt': withLine(1, 'main line 2') });
      await fx.push('main', 'feature');
    },
    preview: { mergeBase: 'older', is_up_to_date: false, can_merge: true, can_fast_forward: false, conflicts: [] },
    // Renames are reported as a deletion plus an addition.
    diff: [
      ['docs/r2.txt', 'added', 10, 0, false],
      ['r.txt', 'deleted', 0, 10, false],
    ],
    merge: 'merge-commit',
    merged: {
      'r.txt': null,
      'docs/r2.txt': lines(...TEN.map((l, j) => (j === 1 ? 'main line 2' : j === 8 ? 'feature line 9' : l))),
    },
  },
  {
    name: 'unrelated histories',
    async build(fx) {
      await base(fx, { 'm.txt': lines('main') });
      await fx.orphan('feature');
      await fx.commit('orphan root', { 'o.txt': lines('orphan', 'two') });
      await fx.push('main', 'feature');
    },
    preview: { mergeBase: null, is_up_to_date: false, can_merge: false, can_fast_forward: false, conflicts: [] },
    // No merge base: everything on head counts as new.
    diff: [['o.txt', 'added', 2, 0, false]],
    merge: 'validation',
  },
  {
    name: 'head already merged',
    async build(fx) {
      await base(fx, { 'a.txt': lines('a') });
      await fx.switch('feature', true);
      await fx.commit('feature work', { 'a.txt': lines('a', 'b') });
      await fx.switch('main');
      await fx.git('merge', '--quiet', '--no-ff', '-m', 'merged by hand', 'feature');
      await fx.commit('main moves on', { 'c.txt': lines('c') });
      await fx.push('main', 'feature');
    },
    preview: { mergeBase: 'head', is_up_to_date: true, can_merge: true, can_fast_forward: false, conflicts: [] },
    diff: [],
    merge: 'up-to-date',
    merged: { 'a.txt': lines('a', 'b'), 'c.txt': lines('c') },
  },
  {
    name: 'empty diff (head and base at the same commit)',
    async build(fx) {
      await base(fx, { 'a.txt': lines('a') });
      await fx.switch('feature', true);
      await fx.push('main', 'feature');
    },
    preview: { mergeBase: 'base', is_up_to_date: true, can_merge: true, can_fast_forward: false, conflicts: [] },
    diff: [],
    merge: 'up-to-date',
  },
];
