import { sign, verify, type KeyObject } from 'node:crypto';

/** Header carrying the gateway's signed statement of who the caller is. */
export const ASSERTION_HEADER = 'x-gateway-assertion';

export interface CallerIdentity {
  accountId: string;
  apiKeyId: string;
  /** The key's scopes (contract section 5): each subgraph checks its root fields against them again. */
  scopes: readonly string[];
}

interface Claims {
  acc: string;
  key: string;
  scp: string[];
  iat: number;
  exp: number;
}

const VERSION = 'v1';
/** Clock skew tolerated between the gateway and the subgraphs. */
const SKEW_SECONDS = 5;

/**
 * A compact Ed25519-signed token: the gateway signs with the private key; subgraphs verify with the public key only,
 * so a subgraph can never mint an identity it did not receive.
 */
export function signAssertion(privateKey: KeyObject, identity: CallerIdentity, ttlSeconds: number, now = Date.now()): string {
  const iat = Math.floor(now / 1000);
  const claims: Claims = { acc: identity.accountId, key: identity.apiKeyId, scp: [...identity.scopes], iat, exp: iat + ttlSeconds };
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
    !Array.isArray(claims.scp) ||
    !claims.scp.every((scope) => typeof scope === 'string') ||
    typeof claims.iat !== 'number' ||
    typeof claims.exp !== 'number' ||
    claims.exp + SKEW_SECONDS < nowSeconds ||
    claims.iat - SKEW_SECONDS > nowSeconds
  ) {
    return undefined;
  }
  return { accountId: claims.acc, apiKeyId: claims.key, scopes: claims.scp };
}

const MAX_CACHED = 10_000;

/**
 * Signs once per caller and reuses the token for half its lifetime: signing on every request would
 * cost the gateway a signature and every subgraph a verification per request for the same identity.
 */
export class AssertionIssuer {
  private readonly issued = new Map<string, { token: string; renewAt: number }>();

  constructor(
    private readonly privateKey: KeyObject,
    private readonly ttlSeconds: number,
  ) {}

  tokenFor(identity: CallerIdentity, now = Date.now()): string {
    // A change of the key's scopes gets a new token at once.
    const cacheKey = `${identity.accountId}:${identity.apiKeyId}:${identity.scopes.join(' ')}`;
    const cached = this.issued.get(cacheKey);
    if (cached && cached.renewAt > now) return cached.token;
    const token = signAssertion(this.privateKey, identity, this.ttlSeconds, now);
    if (this.issued.size >= MAX_CACHED) this.issued.clear();
    this.issued.set(cacheKey, { token, renewAt: now + (this.ttlSeconds * 1000) / 2 });
    return token;
  }
}

/** Remembers tokens already verified until they expire, so a reused token is checked once per process. */
export class AssertionVerifier {
  private readonly verified = new Map<string, { identity: CallerIdentity; expiresAt: number }>();

  constructor(private readonly publicKey: KeyObject) {}

  verify(token: string | undefined, now = Date.now()): CallerIdentity | undefined {
    if (!token) return undefined;
    const cached = this.verified.get(token);
    if (cached) {
      if (cached.expiresAt > now) return cached.identity;
      this.verified.delete(token);
    }
    const identity = verifyAssertion(this.publicKey, token, now);
    if (!identity) return undefined;
    const claims = JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString('utf8')) as Claims;
    if (this.verified.size >= MAX_CACHED) this.verified.clear();
    this.verified.set(token, { identity, expiresAt: claims.exp * 1000 });
    return identity;
  }
}
