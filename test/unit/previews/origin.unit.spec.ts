import { expect } from 'chai';
import { ConfigError, configWarnings, loadConfig } from '../../../infra/config.js';
import { parsePreviewHost, PREVIEW_LABEL, previewOrigin } from '../../../services/previews/origin.js';
import { appLabel, appOrigin, parseAppHost } from '../../../services/apps/origin.js';
import { PREVIEW_COOKIE, signPreviewCookie, verifyPreviewCookie } from '../../../services/previews/grants.js';
import { apiOriginResponseHeaders, hostOnlyCookie, ownOriginRequestHeaders, ownOriginResponseHeaders, previewOriginResponseHeaders } from '../../../api/proxy-headers.js';

const ID = '0c0c37c3-06e9-4719-bac7-17af2bf1cc6f';

describe('previews: origins, the cookie, header rules', () => {
  it('parses preview hosts under the domain only', () => {
    const local = {};
    expect(parsePreviewHost(`p3000-${ID}.localhost:8080`, local)).to.deep.equal({ port: 3000, sessionId: ID });
    expect(parsePreviewHost(`P3000-${ID.toUpperCase()}.LOCALHOST`, local)).to.deep.equal({ port: 3000, sessionId: ID });
    expect(parsePreviewHost('127.0.0.1:8080', local)).to.equal(null);
    expect(parsePreviewHost('localhost:8080', local)).to.equal(null);
    for (const h of [`p0-${ID}.localhost`, `p70000-${ID}.localhost`, `p3000-${ID}x.localhost`, `x.p3000-${ID}.localhost`, 'evil.localhost']) expect(parsePreviewHost(h, local), h).to.equal('unknown');
    const pub = { SVC_PUBLIC_URL: 'https://svc.example.com', SVC_PREVIEW_DOMAIN: 'svc-preview.net' };
    expect(parsePreviewHost(`p80-${ID}.svc-preview.net`, pub)).to.deep.equal({ port: 80, sessionId: ID });
    expect(parsePreviewHost(`p80-${ID}.localhost:8080`, pub)).to.equal(null);
    expect(parsePreviewHost('svc.example.com', pub)).to.equal(null);
    expect(previewOrigin(pub, ID, 80, 8080)).to.equal(`https://p80-${ID}.svc-preview.net`);
    expect(previewOrigin({}, ID, 3000, 41234)).to.equal(`http://p3000-${ID}.localhost:41234`);
  });

  it('needs a preview domain of its own when the public URL is not loopback', () => {
    expect(() => loadConfig({ SVC_PUBLIC_URL: 'https://svc.example.com' })).to.throw(ConfigError, /SVC_PREVIEW_DOMAIN: required/);
    expect(() => loadConfig({ SVC_PUBLIC_URL: 'https://svc.example.com', SVC_PREVIEW_DOMAIN: 'example.com' })).to.throw(ConfigError, /must not hold/);
    expect(() => loadConfig({ SVC_PUBLIC_URL: 'https://svc.example.com', SVC_PREVIEW_DOMAIN: 'svc.example.com' })).to.throw(ConfigError, /must not hold/);
    expect(() => loadConfig({ SVC_PREVIEW_DOMAIN: 'a b' })).to.throw(ConfigError, /SVC_PREVIEW_DOMAIN/);
    expect(() => loadConfig({ SVC_PUBLIC_URL: 'https://svc.example.com', SVC_PREVIEW_DOMAIN: 'svc-preview.net' })).not.to.throw();
    expect(() => loadConfig({ SVC_PUBLIC_URL: 'http://localhost:8080' })).not.to.throw();
    expect(() => loadConfig({})).not.to.throw();
  });

  it('apps: a label per (name, project), hashed when too long or read as a preview; the apps domain may not hold the dashboard', () => {
    const pid = '0123abcd-4567-4890-8abc-def012345678';
    expect(appLabel('web', pid)).to.equal('web-0123abcd4567');
    const long = 'a'.repeat(51);
    expect(appLabel(long, pid)).to.match(/^a{33}-[0-9a-f]{16}-0123abcd4567$/);
    expect(appLabel(long, pid).length).to.be.at.most(63);
    expect(appLabel('a'.repeat(50), pid).length).to.equal(63);
    const lookalike = appLabel(`p3000-${ID.slice(0, 23)}`, '11111111-1111-4111-8111-111111111111');
    expect(lookalike).to.not.match(PREVIEW_LABEL);
    expect(parseAppHost('web-0123abcd4567.localhost:8080', {})).to.deep.equal({ label: 'web-0123abcd4567', projectHex: '0123abcd4567' });
    expect(parseAppHost(`p3000-${ID}.localhost`, {})).to.equal(null); // a preview's
    expect(parseAppHost('x.localhost', {})).to.equal('unknown');
    expect(parseAppHost('127.0.0.1:8080', {})).to.equal(null);
    const cfg = { SVC_PUBLIC_URL: 'https://svc.test', SVC_PREVIEW_DOMAIN: 'preview.svc.test', SVC_APPS_DOMAIN: 'apps.svc.test' };
    expect(appOrigin(cfg, 'web', pid, 1)).to.equal('https://web-0123abcd4567.apps.svc.test');
    expect(appOrigin({}, 'web', pid, 8080)).to.equal('http://web-0123abcd4567.localhost:8080');
    expect(appOrigin({ SVC_PREVIEW_DOMAIN: 'p.example' }, 'web', pid, 1)).to.equal('http://web-0123abcd4567.p.example');
    expect(() => loadConfig({ SVC_PUBLIC_URL: 'https://svc.test', SVC_PREVIEW_DOMAIN: 'p.example', SVC_APPS_DOMAIN: 'test' })).to.throw(ConfigError, /SVC_APPS_DOMAIN: must not hold the dashboard's host svc\.test \(SVC_PUBLIC_URL\)/);
    const warned = configWarnings(loadConfig(cfg), { SVC_APPS_HOST: '0.0.0.0' });
    expect(warned.join('\n')).to.match(/SVC_PREVIEW_DOMAIN \(preview\.svc\.test\) and SVC_PUBLIC_URL \(svc\.test\) share the site svc\.test/);
    expect(warned.join('\n')).to.match(/SVC_APPS_DOMAIN \(apps\.svc\.test\).*share the site/);
    expect(warned.join('\n')).to.match(/SVC_APPS_HOST is no longer read/);
    expect(configWarnings(loadConfig({ SVC_PUBLIC_URL: 'https://svc.test', SVC_PREVIEW_DOMAIN: 'svc-apps.net' }), {})).to.deep.equal([]);
  });

  it('the cookie verifies only untouched and unexpired', () => {
    const key = Buffer.alloc(32, 7);
    const g = { user_id: 'u', project_id: 'p', session_id: ID, port: 3000, frame_origin: 'http://127.0.0.1:8080' };
    const v = signPreviewCookie(key, g, 1_000_000);
    expect(verifyPreviewCookie(key, v, 1_000_000)).to.deep.equal(g);
    expect(verifyPreviewCookie(key, v, 1_000_000 + 31 * 60_000)).to.equal(null);
    expect(verifyPreviewCookie(Buffer.alloc(32, 8), v, 1_000_000)).to.equal(null);
    const [body, sig] = v.split('.');
    const forged = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(body!, 'base64url').toString()), p: 3001 })).toString('base64url');
    expect(verifyPreviewCookie(key, `${forged}.${sig}`, 1_000_000)).to.equal(null);
    expect(verifyPreviewCookie(key, undefined)).to.equal(null);
  });

  it('defuses responses on the API origin and keeps preview cookies host-only', () => {
    const api = apiOriginResponseHeaders({ 'access-control-allow-origin': '*', 'set-cookie': ['a=1'], 'content-security-policy': 'default-src *', 'content-type': 'text/html', connection: 'close' });
    expect(api).to.deep.equal({ 'content-type': 'text/html', 'content-security-policy': 'sandbox', 'x-content-type-options': 'nosniff', 'referrer-policy': 'no-referrer' });
    expect(hostOnlyCookie('a=1; Domain=.example.com; Path=/;domain=x')).to.equal('a=1; Path=/');
    const pv = previewOriginResponseHeaders({ 'set-cookie': [`${PREVIEW_COOKIE}=x; Path=/`, 'a=1; Domain=localhost'], 'content-security-policy': "script-src 'self'" }, 'http://127.0.0.1:1');
    expect(pv['set-cookie']).to.deep.equal(['a=1']);
    expect(pv['content-security-policy']).to.deep.equal(["script-src 'self'", 'frame-ancestors http://127.0.0.1:1']);
  });

  it('sandbox bytes never clear the site or pin it: Clear-Site-Data and HSTS dropped on every origin', () => {
    const hostile = { 'clear-site-data': '"cookies", "storage"', 'strict-transport-security': 'max-age=63072000; includeSubDomains', 'content-type': 'application/json' };
    for (const out of [apiOriginResponseHeaders(hostile), previewOriginResponseHeaders(hostile, 'https://svc.test'), ownOriginResponseHeaders(hostile)]) {
      expect(out).to.not.have.any.keys('clear-site-data', 'strict-transport-security');
      expect(out['content-type']).to.equal('application/json');
    }
  });

  it('passes an app its own Authorization and cookies, and no credential of this server', () => {
    const h = ownOriginRequestHeaders({
      host: 'app-0123456789ab.localhost:8080', authorization: 'Basic dTpw', cookie: `a=1; ${PREVIEW_COOKIE}=x; __Host-svc_session=y; svc_session=z; __Host-svc_app=g; t=svc_pat_abcdefghijkl; b=2`,
      'x-svc-user-context': 'forged', 'x-api-key': 'svc_llm_0123456789abcdef', 'x-other': 'kept', connection: 'keep-alive',
      referer: 'http://127.0.0.1:8080/projects/secret',
    }, 'app-0123456789ab.localhost:8080');
    expect(h).to.deep.equal({ authorization: 'Basic dTpw', 'x-other': 'kept', cookie: 'a=1; b=2' });
    expect(ownOriginRequestHeaders({ authorization: 'Bearer svc_pat_0123456789abcdef', referer: 'http://a.localhost/x' }, 'a.localhost')).to.deep.equal({ referer: 'http://a.localhost/x' });
  });
});
