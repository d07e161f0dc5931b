import { generateKeyPairSync, sign } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { AssertionIssuer, AssertionVerifier, signAssertion, verifyAssertion } from '../src/assertion.ts';

const gateway = generateKeyPairSync('ed25519');
const stranger = generateKeyPairSync('ed25519');
const identity = { accountId: '01a2002f-5e6c-707d-8b35-116f38247cd4', apiKeyId: '01a2002f-5e6c-707d-8b35-116f38247cd5', scopes: ['read', 'orders:write'] };
const NOW = Date.UTC(2026, 10, 21, 14, 0, 0);

/** A token with any claims, properly signed by `privateKey`: for claims the real signer never writes. */
function signedToken(claims: unknown, privateKey = gateway.privateKey): string {
  const payload = Buffer.from(typeof claims === 'string' ? claims : JSON.stringify(claims)).toString('base64url');
  return `v1.${payload}.${sign(null, Buffer.from(`v1.${payload}`), privateKey).toString('base64url')}`;
}

describe('gateway assertion', () => {
  it('a token signed by the gateway verifies to the identity it asserts', () => {
    const token = signAssertion(gateway.privateKey, identity, 60, NOW);
    expect(verifyAssertion(gateway.publicKey, token, NOW)).toEqual(identity);
    expect(verifyAssertion(gateway.publicKey, token, NOW + 59_000)).toEqual(identity);
  });

  it('a token with another account put in its payload is refused', () => {
    const token = signAssertion(gateway.privateKey, identity, 60, NOW);
    const [version, , signature] = token.split('.');
    const forged = Buffer.from(JSON.stringify({ acc: 'someone-else', key: identity.apiKeyId, iat: NOW / 1000, exp: NOW / 1000 + 60 })).toString('base64url');
    expect(verifyAssertion(gateway.publicKey, `${version}.${forged}.${signature}`, NOW)).toBeUndefined();
  });

  it('a token whose signature was altered is refused', () => {
    const token = signAssertion(gateway.privateKey, identity, 60, NOW);
    const [version, payload, signature] = token.split('.') as [string, string, string];
    const bytes = Buffer.from(signature, 'base64url');
    bytes[0] = bytes[0]! ^ 0x01;
    expect(verifyAssertion(gateway.publicKey, `${version}.${payload}.${bytes.toString('base64url')}`, NOW)).toBeUndefined();
    expect(verifyAssertion(gateway.publicKey, `${version}.${payload}.`, NOW)).toBeUndefined();
  });

  it('a token signed by another key pair is refused', () => {
    const token = signAssertion(stranger.privateKey, identity, 60, NOW);
    expect(verifyAssertion(gateway.publicKey, token, NOW)).toBeUndefined();
  });

  it('an expired token is refused', () => {
    const token = signAssertion(gateway.privateKey, identity, 60, NOW - 120_000);
    expect(verifyAssertion(gateway.publicKey, token, NOW)).toBeUndefined();
    expect(verifyAssertion(gateway.publicKey, signAssertion(gateway.privateKey, identity, 60, NOW), NOW + 10 * 60_000)).toBeUndefined();
  });

  it('a token issued in the future beyond the clock skew is refused; within a second or two it is accepted', () => {
    expect(verifyAssertion(gateway.publicKey, signAssertion(gateway.privateKey, identity, 60, NOW + 60_000), NOW)).toBeUndefined();
    expect(verifyAssertion(gateway.publicKey, signAssertion(gateway.privateKey, identity, 60, NOW + 2_000), NOW)).toEqual(identity);
  });

  it.each([
    ['no token', undefined],
    ['the empty string', ''],
    ['garbage', 'garbage'],
    ['two parts', 'v1.abc'],
    ['four parts', 'v1.a.b.c'],
    ['another version', signAssertion(gateway.privateKey, identity, 60, NOW).replace(/^v1\./, 'v2.')],
    ['a bare account id', identity.accountId],
  ])('a malformed token (%s) is refused', (_what, token) => {
    expect(verifyAssertion(gateway.publicKey, token, NOW)).toBeUndefined();
  });

  it('a properly signed token with missing or mistyped claims is refused', () => {
    const iat = Math.floor(NOW / 1000);
    expect(verifyAssertion(gateway.publicKey, signedToken('not json'), NOW)).toBeUndefined();
    expect(verifyAssertion(gateway.publicKey, signedToken({ acc: identity.accountId, iat, exp: iat + 60 }), NOW)).toBeUndefined();
    expect(verifyAssertion(gateway.publicKey, signedToken({ acc: 1, key: 'k', iat, exp: iat + 60 }), NOW)).toBeUndefined();
    expect(verifyAssertion(gateway.publicKey, signedToken({ acc: 'a', key: 'k', iat: String(iat), exp: iat + 60 }), NOW)).toBeUndefined();
    expect(verifyAssertion(gateway.publicKey, signedToken({ acc: 'a', key: 'k', scp: ['read'], iat }), NOW)).toBeUndefined();
    // Without scopes a token asserts nothing a subgraph could check: refused, never read as "every scope".
    expect(verifyAssertion(gateway.publicKey, signedToken({ acc: 'a', key: 'k', iat, exp: iat + 60 }), NOW)).toBeUndefined();
    expect(verifyAssertion(gateway.publicKey, signedToken({ acc: 'a', key: 'k', scp: 'read', iat, exp: iat + 60 }), NOW)).toBeUndefined();
    expect(verifyAssertion(gateway.publicKey, signedToken({ acc: 'a', key: 'k', scp: [1], iat, exp: iat + 60 }), NOW)).toBeUndefined();
    // The same helper with complete claims does verify: the refusals above are about the claims.
    expect(verifyAssertion(gateway.publicKey, signedToken({ acc: 'a', key: 'k', scp: ['read'], iat, exp: iat + 60 }), NOW)).toEqual({
      accountId: 'a',
      apiKeyId: 'k',
      scopes: ['read'],
    });
  });
});

describe('AssertionIssuer (the gateway reuses a token per caller)', () => {
  it('reuses the token for the same caller within half its lifetime, and signs a fresh one after', () => {
    const issuer = new AssertionIssuer(gateway.privateKey, 60);
    const first = issuer.tokenFor(identity, NOW);
    expect(issuer.tokenFor(identity, NOW + 29_000)).toBe(first);
    const renewed = issuer.tokenFor(identity, NOW + 31_000);
    expect(renewed).not.toBe(first);
    expect(verifyAssertion(gateway.publicKey, renewed, NOW + 31_000 + 59_000)).toEqual(identity);
  });

  it('never hands one caller the token of another', () => {
    const issuer = new AssertionIssuer(gateway.privateKey, 60);
    const other = { ...identity, accountId: 'other-account' };
    const otherKey = { ...identity, apiKeyId: 'other-key' };
    // A key whose scopes were narrowed gets a token with the narrower scopes at once.
    const narrowed = { ...identity, scopes: ['read'] };
    expect(verifyAssertion(gateway.publicKey, issuer.tokenFor(identity, NOW), NOW)).toEqual(identity);
    expect(verifyAssertion(gateway.publicKey, issuer.tokenFor(other, NOW), NOW)).toEqual(other);
    expect(verifyAssertion(gateway.publicKey, issuer.tokenFor(otherKey, NOW), NOW)).toEqual(otherKey);
    expect(verifyAssertion(gateway.publicKey, issuer.tokenFor(narrowed, NOW), NOW)).toEqual(narrowed);
  });

  it('a reused token is always still valid when handed out', () => {
    const issuer = new AssertionIssuer(gateway.privateKey, 60);
    for (let t = NOW; t < NOW + 300_000; t += 7_000) {
      expect(verifyAssertion(gateway.publicKey, issuer.tokenFor(identity, t), t + 25_000)).toEqual(identity);
    }
  });
});

describe('AssertionVerifier (a subgraph remembers tokens it verified)', () => {
  it('accepts a valid token, again and again', () => {
    const verifier = new AssertionVerifier(gateway.publicKey);
    const token = signAssertion(gateway.privateKey, identity, 60, NOW);
    expect(verifier.verify(token, NOW)).toEqual(identity);
    expect(verifier.verify(token, NOW + 1_000)).toEqual(identity);
  });

  it('refuses a remembered token once it has expired (beyond the clock skew)', () => {
    const verifier = new AssertionVerifier(gateway.publicKey);
    const token = signAssertion(gateway.privateKey, identity, 60, NOW);
    expect(verifier.verify(token, NOW)).toEqual(identity);
    expect(verifier.verify(token, NOW + 60_000 + 6_000)).toBeUndefined();
    expect(verifier.verify(token, NOW + 3_600_000)).toBeUndefined();
  });

  it('refuses forged, foreign and malformed tokens, before and after a valid one was remembered', () => {
    const verifier = new AssertionVerifier(gateway.publicKey);
    const token = signAssertion(gateway.privateKey, identity, 60, NOW);
    const foreign = signAssertion(stranger.privateKey, identity, 60, NOW);
    const [version, payload, signature] = token.split('.') as [string, string, string];
    const bytes = Buffer.from(signature, 'base64url');
    bytes[5] = bytes[5]! ^ 0x80;
    const forged = `${version}.${payload}.${bytes.toString('base64url')}`;
    for (const bad of [foreign, forged, 'garbage', undefined]) expect(verifier.verify(bad, NOW)).toBeUndefined();
    expect(verifier.verify(token, NOW)).toEqual(identity);
    for (const bad of [foreign, forged, 'garbage', undefined]) expect(verifier.verify(bad, NOW)).toBeUndefined();
  });
});
