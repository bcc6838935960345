import { expect } from 'chai';
import { parseCombinedDiff, classify, parseMergeTree, previewFor } from '../../infra/git/engine-ort.js';
import { gitAuth } from '../../infra/git/credentials.js';
import { cleanEnv, redact, splitNul } from '../../lib/git-run.js';
import { assertRemoteUrl } from '../../infra/git/remote-url.js';
import { mirrorPathFor } from '../../infra/git/mirror.js';

const A = 'a'.repeat(40);
const B = 'b'.repeat(40);
const M = 'c'.repeat(40);
const T = 'd'.repeat(40);

describe('merge-ort engine: reading git machine output', () => {
  it('clean merge-tree: tree id, no conflicts', () => {
    expect(parseMergeTree({ code: 0, stdout: Buffer.from(`${T}\0`), stderr: '' })).to.deep.equal({ clean: true, tree: T, conflicts: [] });
  });

  it('conflicted merge-tree: the listed paths, messages ignored', () => {
    const out = `${T}\0f.txt\0img.bin\0\x001\0f.txt\0Auto-merging\0Auto-merging f.txt\n\0`;
    expect(parseMergeTree({ code: 1, stdout: Buffer.from(out), stderr: '' })).to.deep.equal({ clean: false, tree: T, conflicts: ['f.txt', 'img.bin'] });
  });

  it('exit 1 with an empty conflict list is still a conflict (paths taken from the messages)', () => {
    const out = `${T}\0\x002\0lib/new\0src/new\0CONFLICT (directory rename suggested)\0moved\n\0`;
    const r = parseMergeTree({ code: 1, stdout: Buffer.from(out), stderr: '' });
    expect(r.clean).to.equal(false);
    expect(r.conflicts).to.deep.equal(['lib/new', 'src/new']);
    const bare = parseMergeTree({ code: 1, stdout: Buffer.from(`${T}\0\0`), stderr: '' });
    expect(bare).to.deep.equal({ clean: false, tree: T, conflicts: [] });
    expect(previewFor(A, B, M, 'conflicted', bare.conflicts).can_merge).to.equal(false);
  });

  it('classifies by the merge base alone', () => {
    expect(classify(A, B, null).kind).to.equal('unrelated');
    expect(classify(A, B, B).kind).to.equal('up-to-date');
    expect(classify(A, A, A).kind).to.equal('up-to-date');
    expect(classify(A, B, A).kind).to.equal('fast-forward');
    expect(classify(A, B, M).kind).to.equal('three-way');
  });

  it('parses one `diff --raw --numstat --patch -z` (tabs in names, binary files, the patch after the separator)', () => {
    const z = '0'.repeat(40);
    const out = Buffer.from(
      `:100644 100644 ${z} ${z} M\0a.txt\0:000000 100644 ${z} ${z} A\0img.bin\0:100644 000000 ${z} ${z} D\0weird\tname.txt\0` +
        '3\t1\ta.txt\0-\t-\timg.bin\0' + '0\t2\tweird\tname.txt\0' + '\0diff --git a/a.txt b/a.txt\n',
    );
    const d = parseCombinedDiff(A, B, M, out);
    expect(d.files).to.deep.equal([
      { path: 'a.txt', status: 'modified', additions: 3, deletions: 1, binary: false },
      { path: 'img.bin', status: 'added', additions: 0, deletions: 0, binary: true },
      { path: 'weird\tname.txt', status: 'deleted', additions: 0, deletions: 2, binary: false },
    ]);
    expect([d.additions, d.deletions, d.patch]).to.deep.equal([3, 3, 'diff --git a/a.txt b/a.txt\n']);
    expect(parseCombinedDiff(A, B, M, Buffer.alloc(0))).to.include({ additions: 0, deletions: 0, patch: '' });
  });

  it('splitNul drops only the terminator', () => {
    expect(splitNul(Buffer.from('a\0\0b\0'))).to.deep.equal(['a', '', 'b']);
  });
});

describe('git runner and credentials hygiene', () => {
  it('clean env: no prompts, no system or user config, C locale, nothing of the parent git env', () => {
    process.env.GIT_DIR = '/tmp/should-not-leak';
    try {
      const env = cleanEnv({ X: '1' });
      expect(env).to.include({ GIT_TERMINAL_PROMPT: '0', GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null', LC_ALL: 'C', X: '1' });
      expect(env).to.not.have.property('GIT_DIR');
    } finally {
      delete process.env.GIT_DIR;
    }
  });

  it('redacts URL userinfo and known secrets', () => {
    expect(redact("fatal: unable to access 'https://bob:hunter2@host/x.git/'", ['hunter2'])).to.equal(
      "fatal: unable to access 'https://[redacted]@host/x.git/'",
    );
    expect(redact('token hunter2 here', ['hunter2'])).to.equal('token [redacted] here');
  });

  it('credentials go to the helper through env, never argv', () => {
    const auth = gitAuth({ projectId: 'p', url: 'https://h/x.git', credentials: { username: 'bob', password: 'hunter2' } });
    expect(auth.configArgs.join(' ')).to.not.include('hunter2');
    expect(auth.configArgs.join(' ')).to.not.include('bob');
    expect(auth.env).to.deep.equal({ SVC_GIT_USERNAME: 'bob', SVC_GIT_PASSWORD: 'hunter2', SVC_GIT_CRED_PROTOCOL: 'https', SVC_GIT_CRED_HOST: 'h' });
    expect(auth.configArgs.slice(0, 2)).to.deep.equal(['-c', 'credential.helper=']);
    expect(gitAuth({ projectId: 'p', url: 'file:///x' }).env).to.deep.equal({});
  });

  it('remote URLs: ordinary transports only, no embedded credentials, never option-like', () => {
    for (const ok of ['https://git.example.com/a/b.git', 'file:///srv/git/x.git', 'ssh://git@host/x.git', 'git@github.com:o/r.git']) {
      expect(assertRemoteUrl(ok)).to.equal(ok);
    }
    for (const bad of ['-uhttps://x', 'ext::sh -c touch% /tmp/pwned', 'fd::3', 'https://u:p@host/x.git', 'https://u@host/x.git', 'http://h/x\n', '']) {
      expect(() => assertRemoteUrl(bad), bad).to.throw();
    }
  });

  it('mirror paths stay inside the mirrors directory', () => {
    expect(mirrorPathFor('/m', '6f1c2a4e-9b1d')).to.equal('/m/6f1c2a4e-9b1d.git');
    for (const bad of ['../x', '..', 'a/b', '-x', '', '.hidden']) expect(() => mirrorPathFor('/m', bad), bad).to.throw();
  });
});
