import { expect } from 'chai';
import { DotenvError, parseDotenv } from '../../cli/dotenv.js';

describe('dotenv parsing (svc env push)', () => {
  const ok: Array<[string, string, Array<[string, string]>]> = [
    ['plain', 'A=1\nB=two words\n', [['A', '1'], ['B', 'two words']]],
    ['comments and blank lines', '# top\n\n  # indented\nA=1\n', [['A', '1']]],
    ['export prefix', 'export A=1\nexport  B = 2\n', [['A', '1'], ['B', '2']]],
    ['inline comment after an unquoted value', 'A=1 # one\nB=a#b\n', [['A', '1'], ['B', 'a#b']]],
    ['empty value', 'A=\nB=   \nC=#x\n', [['A', ''], ['B', ''], ['C', '']]],
    ['single quotes are literal', "A='x \\n $y # z'\n", [['A', 'x \\n $y # z']]],
    ['double quotes with escapes', 'A="l1\\nl2\\t\\"q\\" \\\\ \\$"\n', [['A', 'l1\nl2\t"q" \\ $']]],
    ['double-quoted value spanning lines', 'KEY="-----BEGIN-----\nabc\n-----END-----"\nB=2\n', [['KEY', '-----BEGIN-----\nabc\n-----END-----'], ['B', '2']]],
    ['comment after a quoted value', 'A="x" # note\nB=\'y\'   \n', [['A', 'x'], ['B', 'y']]],
    ['CRLF line ends and a BOM', '\uFEFFA=1\r\nB=2\r\n', [['A', '1'], ['B', '2']]],
    ['equals signs inside a value', 'URL=postgres://u:p@h/db?a=b\n', [['URL', 'postgres://u:p@h/db?a=b']]],
  ];
  for (const [name, text, want] of ok) it(name, () => expect(parseDotenv(text)).to.deep.equal(want));

  const bad: Array<[string, string, number, RegExp]> = [
    ['a line without =', 'A=1\nJUST_A_WORD\n', 2, /expected NAME=value/],
    ['a bad name', 'A=1\n\n1BAD=x\n', 3, /name must match/],
    ['an unterminated double quote', 'A=1\nB="open\nC=2\n', 2, /unterminated double quote in B/],
    ['an unterminated single quote', "A='open\n", 1, /unterminated single quote/],
    ['text after a quoted value', 'A="x" y\n', 1, /unexpected text/],
  ];
  for (const [name, text, line, msg] of bad) {
    it(`refuses ${name}, naming line ${line}`, () => {
      let err: unknown;
      try {
        parseDotenv(text);
      } catch (e) {
        err = e;
      }
      expect(err).to.be.instanceOf(DotenvError);
      expect((err as DotenvError).line).to.equal(line);
      expect((err as Error).message).to.match(msg).and.match(new RegExp(`^line ${line}:`));
    });
  }
});
