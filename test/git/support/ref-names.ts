/**
 * Names for the ref-format tests: hand-picked hostile ones (option-like, traversal,
 * revision syntax) plus generated combinations of risky pieces.
 */
export const HANDPICKED = [
  'main', 'feature/x', 'session-6f1c2a4e-9b1d-4c1e-8f00-0123456789ab', 'a/b/c/d', 'v1.2.3', 'ä-unicode', 'emoji-🙂',
  'x/HEAD', 'head', 'HEAD', 'refs/heads/main', 'a@b', '@a', 'a@', '@', '@{-1}', 'a@{b', 'a@{', '@{u}', 'a}b',
  '-', '-x', '--upload-pack=touch /tmp/pwned', '--end-of-options', '-c', '--help', 'a-', 'a--b',
  '..', '../etc/passwd', 'a/../b', 'a..b', '...', 'a/./b', './a', 'a/.', '.', '.a', 'a/.b', 'a.', 'a/b.', 'a.b.',
  '.lock', 'a.lock', 'a.lock/b', 'a/b.lock', 'a.lockx', 'a.loc', 'lock', 'a/.lock/b',
  '/', '/a', 'a/', 'a//b', '//', 'a///b',
  'a b', ' a', 'a ', 'a\tb', 'a\nb', 'a\x01b', 'a\x7fb', 'a~b', 'a^b', 'a:b', 'a?b', 'a*b', 'a[b', 'a]b', 'a\\b',
  'a;b', 'a$(id)', 'a`id`', 'a|b', 'a&b', 'a>b', 'a<b', "a'b", 'a"b', 'a!b', 'a#b', 'a%b', 'a{b}', 'a=b', 'a,b', 'a+b',
  '~', '^', ':', 'a:', ':a', 'HEAD~1', 'main^', 'main^{commit}', 'main@{1}', 'main:path',
];

const PIECES = ['a', '-', '.', '..', '/', '//', '@', '@{', '{', '.lock', 'lock', 'HEAD', ' ', '~', 'x.y', '\\', '*'];

/** Every name of up to three pieces from PIECES (a few thousand), deduplicated. */
export function generatedNames(): string[] {
  const out = new Set<string>();
  for (const a of PIECES) {
    out.add(a);
    for (const b of PIECES) {
      out.add(a + b);
      for (const c of ['a', '/', '.', '-', '.lock', '@']) out.add(a + b + c);
    }
  }
  return [...out];
}
