import { expect } from 'chai';
import { checkRepoUrl, isLocalAddress, type RepoUrlPolicy } from '../../../infra/git/url-policy.js';

/**
 * The one address rule (repositories, webhooks, the egress proxy) on IPv6 forms that carry
 * or hide an IPv4: SIIT's IPv4-translated addresses are judged by the IPv4 they embed;
 * Teredo (2001::/32), a tunnel to an address the rule cannot see, is refused whole.
 */
const policy: RepoUrlPolicy = { allowLocalNetworks: false, allowFile: false, allowHttpCredentials: false, allowedHosts: [], blockedHosts: [], dataDir: '/nonexistent', resolve: async () => ['93.184.216.34'] };

describe('url policy: SIIT and Teredo addresses', () => {
  it('SIIT addresses (::ffff:0:0:0/96) are judged by the IPv4 they embed', () => {
    for (const local of ['::ffff:0:127.0.0.1', '::ffff:0:7f00:1', '::ffff:0:a00:5', '::ffff:0:169.254.169.254', '0:0:0:0:ffff:0:c0a8:101', '::ffff:0:0.0.0.0']) {
      expect(isLocalAddress(local), local).to.equal(true);
    }
    for (const pub of ['::ffff:0:8.8.8.8', '::ffff:0:5db8:d822']) expect(isLocalAddress(pub), pub).to.equal(false);
    // The other embeddings keep their rule.
    expect(isLocalAddress('::ffff:127.0.0.1')).to.equal(true);
    expect(isLocalAddress('64:ff9b::7f00:1')).to.equal(true);
    expect(isLocalAddress('64:ff9b::808:808')).to.equal(false);
  });

  it('Teredo (2001::/32) and local-use NAT64 (64:ff9b:1::/48) are refused; neighbouring public space is not', () => {
    for (const tunnel of ['2001::1', '2001:0:4136:e378:8000:63bf:3fff:fdd2', '2001:0:ffff:ffff:ffff:ffff:ffff:ffff', '64:ff9b:1::808:808']) {
      expect(isLocalAddress(tunnel), tunnel).to.equal(true);
    }
    for (const pub of ['2001:1::1', '2001:4860:4860::8888', '2606:4700::1111', '2a00:1450:4001::1']) expect(isLocalAddress(pub), pub).to.equal(false);
  });

  it('a repository URL with a SIIT or Teredo literal is refused as a local network', async () => {
    for (const url of ['http://[::ffff:0:7f00:1]/x.git', 'https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/x.git']) {
      const err = await checkRepoUrl(url, policy).then(() => null, (e: { details?: { rule?: string } }) => e);
      expect(err?.details?.rule, url).to.equal('local network');
    }
  });
});
