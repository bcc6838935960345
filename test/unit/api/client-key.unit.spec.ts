import { expect } from 'chai';
import type { IncomingMessage } from 'node:http';
import { clientAddress, clientKeyOf, parseTrustedProxies } from '../../../api/client-key.js';

const req = (remoteAddress: string | undefined, xff?: string) => ({ socket: { remoteAddress }, headers: xff === undefined ? {} : { 'x-forwarded-for': xff } }) as unknown as IncomingMessage;

describe('clientKeyOf: the one principal key of the per-principal limits', () => {
  const none = parseTrustedProxies('');
  const proxies = parseTrustedProxies('10.0.0.0/8, 127.0.0.1');

  it('is the TCP peer when no proxy is trusted, whatever X-Forwarded-For says', () => {
    expect(clientKeyOf(req('127.0.0.1', '203.0.113.9'), none)).to.equal('addr:127.0.0.1');
    expect(clientKeyOf(req('::ffff:192.0.2.4'), none)).to.equal('addr:192.0.2.4');
    expect(clientKeyOf(req(undefined), none)).to.equal('addr:unknown');
  });

  it('from a trusted proxy: the right-most hop that is not a trusted proxy; a malformed hop stops the walk', () => {
    expect(clientAddress(req('127.0.0.1', '203.0.113.9'), proxies)).to.equal('203.0.113.9');
    expect(clientAddress(req('127.0.0.1', '198.51.100.1, 203.0.113.9, 10.1.2.3'), proxies)).to.equal('203.0.113.9');
    expect(clientAddress(req('127.0.0.1', 'junk, 10.1.2.3'), proxies)).to.equal('10.1.2.3');
    expect(clientAddress(req('127.0.0.1', '[2001:db8::5]:443'), proxies)).to.equal('2001:db8::5');
    expect(clientAddress(req('127.0.0.1', '203.0.113.9:5000'), proxies)).to.equal('203.0.113.9');
    expect(clientAddress(req('127.0.0.1'), proxies)).to.equal('127.0.0.1');
    // An untrusted peer that claims to be behind a proxy: its own address.
    expect(clientAddress(req('192.0.2.8', '203.0.113.9'), proxies)).to.equal('192.0.2.8');
  });

  it('keys IPv6 clients by their /64 (one host holds a whole /64)', () => {
    expect(clientKeyOf(req('2001:db8:1:2:aaaa::1'), none)).to.equal('addr:2001:db8:1:2::/64');
    expect(clientKeyOf(req('2001:db8:1:2:bbbb:cccc:dddd:eeee'), none)).to.equal('addr:2001:db8:1:2::/64');
    expect(clientKeyOf(req('2001:db8:1:3::1'), none)).to.not.equal(clientKeyOf(req('2001:db8:1:2::1'), none));
  });
});
