import { sign, verify, type KeyObject } from 'node:crypto';

/** Header carrying the gateway's signed statement of who the caller is. */
export const ASSERTION_HEADER = 'x-gateway-assertion';

export interface CallerIdentity {
  accountId: string;
  apiKeyId: string;
}

interface Claims {
  acc: string;
  key: string;
  iat: number;
  exp: number;
}

const VERSION = 'v1';
/** Clock skew tolerated between the gateway and the subgraphs. */
const SKEW_SECONDS = 5;

/**
 * A compact Ed25519-signed token: the gateway (and the fills sweeper, which acts for the account
 * that recorded a fill) sign with the private key; subgraphs verify with the public key only,
 * so a subgraph can never mint an identity it did not receive.
 */
export function signAssertion(privateKey: KeyObject, identity: CallerIdentity, ttlSeconds: number, now = Date.now()): string {
  const iat = Math.floor(now / 1000);
  const claims: Claims = { acc: identity.accountId, key: identity.apiKeyId, iat, exp: iat + ttlSeconds };
  const payload = Buffer.from(JSON.stringify(claims), 'utf8').toString('base64url');
  const signature = sign(null, Buffer.from(`${VERSION}.${payload}`), privateKey).toString('base64url');
  return `${VERSION}.${payload}.${signature}`;
}

/** The identity the token asserts, or undefined when it is malformed, forged or expired. */
export function verifyAssertion(publicKey: KeyObject, token: string | undefined, now = Date.now()): CallerIdentity | undefined {
  if (!token) return undefined;
  const parts = token.split('.');
  if (parts.length !== 3 || parts[0] !== VERSION) return undefined;
  const [, payload, signature] = parts as [string, string, string];
  let valid = false;
  try {
    valid = verify(null, Buffer.from(`${VERSION}.${payload}`), publicKey, Buffer.from(signature, 'base64url'));
  } catch {
    return undefined;
  }
  if (!valid) return undefined;
  let claims: Partial<Claims>;
  try {
    claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Partial<Claims>;
  } catch {
    return undefined;
  }
  const nowSeconds = Math.floor(now / 1000);
  if (
    typeof claims.acc !== 'string' ||
    typeof claims.key !== 'string' ||
    typeof claims.iat !== 'number' ||
    typeof claims.exp !== 'number' ||
    claims.exp + SKEW_SECONDS < nowSeconds ||
    claims.iat - SKEW_SECONDS > nowSeconds
  ) {
    return undefined;
  }
  return { accountId: claims.acc, apiKeyId: claims.key };
}
