import { expect } from 'chai';
import { parseManifest } from '../../../domain/manifest/parse.js';
import { egressAllows, egressRules } from '../../../domain/manifest/egress.js';
import { decide, type Session, type SessionState, fold } from '../../../domain/session/index.js';
import { egressProxyEnv } from '../../../services/sessions/egress.js';

describe('[sandbox] egress', () => {
  const parse = (egress: string) => parseManifest(`[sandbox]\negress = ${egress}\n`);

  it('accepts hosts, *.suffix and host:port entries, lowercased; absent stays absent', () => {
    const m = parse('["API.anthropic.com", "*.npmjs.org", "git.example:8443", "*.corp.example:22"]');
    expect(m.errors).to.deep.equal([]);
    expect(m.manifest!.sandbox.egress).to.deep.equal(['api.anthropic.com', '*.npmjs.org', 'git.example:8443', '*.corp.example:22']);
    expect(parseManifest('[sandbox]\ncpus = 1\n').manifest!.sandbox.egress).to.equal(undefined);
    expect(parse('[]').manifest!.sandbox.egress).to.deep.equal([]);
    expect(parse('["a.example"]').warnings).to.deep.equal([]);
  });

  for (const [what, entry] of [
    ['an IPv4 address', '"127.0.0.1"'],
    ['an integer spelling of an address', '"2130706433"'],
    ['an IPv6 address', '"[::1]:443"'],
    ['a bare *', '"*"'],
    ['a wildcard in the middle', '"api.*.example"'],
    ['a URL', '"https://api.example/"'],
    ['port 0', '"a.example:0"'],
    ['port 65536', '"a.example:65536"'],
    ['a label starting with -', '"-x.example"'],
    ['not a string', '[1]'],
  ] as const) {
    it(`refuses ${what}`, () => {
      const m = parse(`[${entry}]`.replace(/^\[\[1\]\]$/, '[1]'));
      expect(m.manifest, what).to.equal(null);
      expect(m.errors.map((e) => e.path).join(' ')).to.match(/sandbox\.egress\.0/);
    });
  }

  it('matches exact hosts and names under a suffix; 80/443 unless the entry names a port', () => {
    const rules = egressRules(['api.anthropic.com', '*.npmjs.org', 'git.example:8443']);
    const yes: Array<[string, number]> = [['api.anthropic.com', 443], ['api.anthropic.com', 80], ['registry.npmjs.org', 443], ['a.b.npmjs.org', 80], ['git.example', 8443]];
    const no: Array<[string, number]> = [['npmjs.org', 443], ['evilnpmjs.org', 443], ['api.anthropic.com', 8443], ['x.api.anthropic.com', 443], ['git.example', 443], ['registry.npmjs.org', 22]];
    for (const [h, p] of yes) expect(egressAllows(rules, h, p), `${h}:${p}`).to.equal(true);
    for (const [h, p] of no) expect(egressAllows(rules, h, p), `${h}:${p}`).to.equal(false);
  });

  it('the proxy environment points every spelling at the gateway port and keeps loopback direct', () => {
    expect(egressProxyEnv(3128)).to.deep.include({
      HTTP_PROXY: 'http://127.0.0.1:3128',
      HTTPS_PROXY: 'http://127.0.0.1:3128',
      http_proxy: 'http://127.0.0.1:3128',
      https_proxy: 'http://127.0.0.1:3128',
      NO_PROXY: '127.0.0.1,localhost',
    });
  });

  it('a refusal joins the history only for the live sandbox, and changes nothing else', () => {
    const at = '2026-01-01T00:00:00.000Z';
    const sid = '00000000-0000-4000-8000-000000000001';
    const sb = '00000000-0000-4000-8000-0000000000b1';
    const s = fold([
      { type: 'SessionCreated', data: { session_id: sid, account_id: sid, project_id: sid, base_ref: 'main', agent: 'build', model: null, prompt: null, trigger: null, created_by: sid, created_at: at } },
      { type: 'SandboxRequested', data: { sandbox_id: sb, provider: 'process', at } },
    ]) as Session;
    const meta = { actor: sid, now: new Date(at) };
    const cmd = (sandbox_id: string) => ({ type: 'RecordEgressRefused' as const, data: { sandbox_id, host: 'x.example', port: 443, reason: 'not listed' }, meta });
    const events = decide(cmd(sb), s);
    expect(events).to.deep.equal([{ type: 'SessionEgressRefused', data: { sandbox_id: sb, host: 'x.example', port: 443, reason: 'not listed', at } }]);
    expect(fold(events, s as SessionState)).to.equal(s);
    expect(decide(cmd('00000000-0000-4000-8000-0000000000b2'), s)).to.deep.equal([]);
  });
});
