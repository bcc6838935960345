import { expect } from 'chai';
import { chatRenderer } from '../../../api/dashboard/chat-render.js';

const R = chatRenderer();

/**
 * Every tag the renderer may emit, with the attributes each may carry. Anything the input
 * wrote is escaped, so any other tag or attribute in the output is an injection.
 */
const ALLOWED: Record<string, string[]> = {
  a: ['href', 'rel', 'target'], p: ['class', 'role'], br: [], strong: [], em: [], code: [], pre: ['class'], ul: [], ol: [], li: [], blockquote: [], hr: [],
  h3: [], h4: [], h5: [], h6: [], div: ['class', 'data-turn'], details: ['class', 'data-part'], summary: ['class'], span: ['class'],
};

function assertSafe(out: string): void {
  for (const m of out.matchAll(/<\/?([A-Za-z][A-Za-z0-9]*)([^>]*)>/g)) {
    const tag = m[1]!.toLowerCase();
    expect(ALLOWED, `tag <${tag}> in ${out}`).to.have.property(tag);
    const attrs = m[2]!;
    // Attributes are name="value" pairs with no quote inside a value, nothing else.
    const rest = attrs.replace(/\s([a-z-]+)="([^"]*)"/g, (_x, name: string, value: string) => {
      expect(ALLOWED[tag], `attribute ${name} on <${tag}> in ${out}`).to.include(name);
      if (name === 'href') expect(value, out).to.match(/^https?:\/\//);
      if (name === 'rel') expect(value).to.equal('noopener noreferrer nofollow');
      return '';
    });
    expect(rest.trim(), `stray attribute text on <${tag}>: ${attrs}`).to.equal('');
  }
  expect(out).to.not.match(/<(script|img|iframe|svg|style|object|embed|math|form|input)/i);
}

describe('chat renderer: markdown subset', () => {
  it('renders paragraphs, code blocks, inline code, emphasis, lists, headings, quotes and links', () => {
    const out = R.markdown(['# Title', '', 'Some **bold**, *em* and `code` text.', 'second line', '', '- one', '- two', '', '1. first', '2. second', '', '```ts', 'const a = 1 < 2;', '```', '', '> quoted', '', 'see [docs](https://example.com/a?b=1&c=2) or https://example.org/x.'].join('\n'));
    expect(out).to.include('<h3>Title</h3>');
    expect(out).to.include('<p>Some <strong>bold</strong>, <em>em</em> and <code>code</code> text.<br>second line</p>');
    expect(out).to.include('<ul><li>one</li><li>two</li></ul>');
    expect(out).to.include('<ol><li>first</li><li>second</li></ol>');
    expect(out).to.include('<pre class="code"><code>const a = 1 &lt; 2;</code></pre>');
    expect(out).to.include('<blockquote><p>quoted</p></blockquote>');
    expect(out).to.include('<a href="https://example.com/a?b=1&amp;c=2" rel="noopener noreferrer nofollow" target="_blank">docs</a>');
    expect(out).to.include('<a href="https://example.org/x" rel="noopener noreferrer nofollow" target="_blank">https://example.org/x</a>.');
    assertSafe(out);
  });

  it('leaves snake_case and lone markers alone', () => {
    expect(R.markdown('a_b_c and 2 * 3 * 4')).to.equal('<p>a_b_c and 2 * 3 * 4</p>');
  });

  const hostile: Array<[string, string]> = [
    ['a script tag', '<script>alert(1)</script>'],
    ['an img with onerror', '<img src=x onerror=alert(1)>'],
    ['a javascript: link', '[click](javascript:alert(1))'],
    ['a JavaScript: link with case and spaces', '[click]( JaVaScRiPt:alert(1) )'],
    ['a data: link', '[x](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)'],
    ['a data: image', '![x](data:image/svg+xml,<svg onload=alert(1)>)'],
    ['a remote image', '![tracker](https://evil.example/pixel.png)'],
    ['an attribute-breaking quote in a link', '[x](https://a.example/" onmouseover="alert(1))'],
    ['a quote in an autolink', 'https://a.example/"onmouseover="alert(1)"'],
    ['a single-quote break', "[x](https://a.example/' onclick='alert(1))"],
    ['html inside inline code', '`<script>alert(1)</script>`'],
    ['html inside a fenced block', '```\n</code></pre><script>alert(1)</script>\n```'],
    ['html inside emphasis and a list', '- **<b onclick=alert(1)>x</b>**\n- *<iframe src=javascript:alert(1)>*'],
    ['a link label holding a link', '[[inner](https://a.example)](https://b.example)'],
    ['a vbscript: link', '[x](vbscript:msgbox(1))'],
    ['an html comment and entities', '<!-- x --> &lt;script&gt; &#x3C;script&#x3E;'],
    ['a svg', '<svg><script>alert(1)</script></svg>'],
    ['a backtick attribute break', '`` ` `` <a href=`javascript:alert(1)`>x</a>'],
  ];
  for (const [what, src] of hostile) {
    it(`escapes hostile input: ${what}`, () => {
      const out = R.markdown(src);
      assertSafe(out);
      expect(out).to.not.match(/href="(?!https?:)/i);
      expect(out.toLowerCase()).to.not.include('href="javascript').and.not.include('href="data');
    });
  }

  it('renders image syntax as a link with its alt text, never an image', () => {
    const out = R.markdown('![a chart](https://example.com/c.png)');
    expect(out).to.equal('<p><a href="https://example.com/c.png" rel="noopener noreferrer nofollow" target="_blank">image: a chart</a></p>');
  });

  it('keeps a link whose target is not http(s) as its text only', () => {
    expect(R.markdown('[click](javascript:alert(1))')).to.equal('<p>click</p>');
    expect(R.markdown('[x](data:text/html,hi)')).to.equal('<p>x</p>');
  });

  it('percent-encodes quotes in an accepted URL', () => {
    const out = R.markdown('[x](https://a.example/"><script>)');
    assertSafe(out);
    expect(out).to.include('href="https://a.example/%22%3E%3Cscript%3E"');
  });

  it('stays fast on pathological input', () => {
    const t0 = Date.now();
    for (const src of ['['.repeat(200_000), '*a'.repeat(100_000), '`'.repeat(100_000) + 'x', '**'.repeat(100_000), '> '.repeat(50_000), '- '.repeat(50_000) + '\n'.repeat(5), '_x'.repeat(100_000), 'http://'.repeat(30_000)]) {
      const out = R.markdown(src);
      expect(out).to.not.match(/<(?!\/?(p|em|strong|code|pre|br|ul|ol|li|blockquote|a|hr|h[3-6])[ >])/);
    }
    expect(Date.now() - t0).to.be.below(8000); // quadratic scans would take minutes here;
  });
});

describe('chat renderer: the conversation', () => {
  const history = [
    { info: { id: 'msg_u1', role: 'user' }, parts: [{ id: 'p1', type: 'text', text: 'Hi <script>alert(1)</script>' }, { id: 'p1s', type: 'text', text: 'synthetic', synthetic: true }] },
    {
      info: { id: 'msg_a1', role: 'assistant', parentID: 'msg_u1', modelID: 'scripted', tokens: { input: 1000, output: 50 } },
      parts: [
        { id: 'p2', type: 'step-start' },
        { id: 'p3', type: 'tool', tool: 'bash', state: { status: 'completed', title: 'echo <b>', input: { command: 'echo "<img src=x onerror=alert(1)>"' }, output: '<img src=x onerror=alert(1)>\n' } },
        { id: 'p4', type: 'retry', attempt: 2, error: { name: 'APIError', data: { message: 'rate <limited>' } } },
      ],
    },
    { info: { id: 'msg_a2', role: 'assistant', parentID: 'msg_u1', modelID: 'scripted', tokens: { input: 1200, output: 20 } }, parts: [{ id: 'p5', type: 'text', text: 'Done: **ok**' }] },
    { info: { id: 'msg_u2', role: 'user' }, parts: [{ id: 'p6', type: 'text', text: 'again' }] },
    { info: { id: 'msg_a3', role: 'assistant', error: { name: 'ProviderAuthError', data: { message: 'No model: set <SVC_LLM_UPSTREAM_URL>' } } }, parts: [] },
  ];

  it('groups each prompt with its replies: the user turn once, tools collapsed with their output, retries, errors, usage', () => {
    const blocks = R.conversation(history);
    expect(blocks.map((b) => b.key)).to.deep.equal(['msg_u1', 'msg_u2']);
    const first = blocks[0]!.html;
    expect(first.match(/class="user"/g)).to.have.length(1);
    expect(first).to.include('Hi &lt;script&gt;alert(1)&lt;/script&gt;').and.not.include('synthetic');
    expect(first).to.include('<details class="tool tool-completed" data-part="p3"><summary><span class="tool-name">bash</span>');
    expect(first).to.include('&lt;img src=x onerror=alert(1)&gt;');
    expect(first).to.include('Retry 2: rate &lt;limited&gt;');
    expect(first).to.include('<div class="md"><p>Done: <strong>ok</strong></p></div>');
    expect(first).to.include('scripted · 2200 input tokens · 70 output tokens');
    expect(blocks[1]!.html).to.include('<strong>ProviderAuthError</strong>: No model: set &lt;SVC_LLM_UPSTREAM_URL&gt;');
    for (const b of blocks) assertSafe(b.html);
  });

  it('takes anything for history without throwing', () => {
    for (const v of [null, undefined, 'x', 1, {}, [null, 1, 'x', { info: null, parts: 'x' }, { info: { role: 'assistant', error: 'x' }, parts: [null, { type: 'tool', state: null }] }]]) {
      for (const b of R.conversation(v)) assertSafe(b.html);
    }
  });

  it('is one self-contained function, so the browser runs the same code', () => {
    // app.js embeds its source: it must evaluate on its own, with nothing from this module in scope.
    const again = new Function(`return (${chatRenderer.toString()})();`)() as ReturnType<typeof chatRenderer>;
    expect(again.markdown('**x** [a](javascript:1)')).to.equal(R.markdown('**x** [a](javascript:1)'));
    expect(again.conversation(history)).to.deep.equal(R.conversation(history));
  });
});
