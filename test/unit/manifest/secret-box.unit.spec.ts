import { expect } from 'chai';
import { createCipheriv, randomBytes } from 'node:crypto';
import { secretBox, staticKeyring } from '../../../infra/secret-box.js';

describe('SecretBox (AES-256-GCM, AAD, key ids)', () => {
  const k1 = randomBytes(32);
  const k2 = randomBytes(32);

  it('gives different ciphertexts for equal values (fresh nonce) that both open', () => {
    const box = secretBox(k1);
    const a = box.seal('same', 'p\0NAME');
    const b = box.seal('same', 'p\0NAME');
    expect(a).to.not.equal(b);
    expect(box.open(a, 'p\0NAME')).to.equal('same');
    expect(box.open(b, 'p\0NAME')).to.equal('same');
    expect(a).to.not.contain('same');
  });

  it('binds the associated data: a ciphertext moved to another name does not open', () => {
    const box = secretBox(k1);
    const sealed = box.seal('v', 'p\0A');
    expect(() => box.open(sealed, 'p\0B')).to.throw();
  });

  it('opens values sealed under an older key in the ring and seals under the newest', () => {
    const old = secretBox(k1);
    const sealed = old.seal('v', 'x');
    const rotated = secretBox(staticKeyring([k2, k1]));
    expect(rotated.open(sealed, 'x')).to.equal('v');
    expect(rotated.keyIdOf(rotated.seal('v', 'x'))).to.equal(rotated.keyId);
    expect(rotated.keyIdOf(sealed)).to.equal(old.keyId);
    expect(() => secretBox(k2).open(sealed, 'x')).to.throw(/does not have/);
  });

  it('still reads the v1 format (no key id, no AAD)', () => {
    const iv = randomBytes(12);
    const c = createCipheriv('aes-256-gcm', k1, iv);
    const data = Buffer.concat([c.update('legacy', 'utf8'), c.final()]);
    const v1 = ['v1', iv.toString('base64url'), c.getAuthTag().toString('base64url'), data.toString('base64url')].join('.');
    expect(secretBox(staticKeyring([k2, k1])).open(v1)).to.equal('legacy');
  });
});
