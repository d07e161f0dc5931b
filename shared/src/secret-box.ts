import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

/**
 * Secrets at rest that a service must read back, so cannot hash: sealed with AES-256-GCM under a key
 * the database does not hold, so a copy of the database alone reveals none of them. Webhook signing
 * secrets are sealed under WEBHOOK_SECRET_KEY (a copy of the events database cannot forge webhooks);
 * the answers kept for `Idempotency-Key` repeats, which may carry a signing secret, under a key
 * derived from API_KEY_HMAC_SECRET. `context` (the account id, or what names the row) is bound in as
 * associated data: a sealed value moved to another row does not open.
 * Format: `v1.<iv>.<ciphertext>.<tag>`, base64url parts.
 */
const VERSION = 'v1';

/** Whether a stored value is sealed here, rather than a value stored before it was sealed. */
export function isSealed(value: string): boolean {
  return value.startsWith(`${VERSION}.`);
}

export function sealSecret(key: Buffer, secret: string, context: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(Buffer.from(context, 'utf8'));
  const ciphertext = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
  return [VERSION, iv, ciphertext, cipher.getAuthTag()].map((part) => (typeof part === 'string' ? part : part.toString('base64url'))).join('.');
}

const TAG_BYTES = 16;

export function openSecret(key: Buffer, sealed: string, context: string): string {
  const [version, iv, ciphertext, tag] = sealed.split('.');
  if (version !== VERSION || !iv || !ciphertext || !tag) throw new Error('a sealed secret is malformed');
  const authTag = Buffer.from(tag, 'base64url');
  // Node accepts a GCM tag cut as short as 4 bytes unless told its length: integrity would rest on 32 bits.
  if (authTag.length !== TAG_BYTES) throw new Error('a sealed secret is malformed');
  const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'), { authTagLength: TAG_BYTES });
  decipher.setAAD(Buffer.from(context, 'utf8'));
  decipher.setAuthTag(authTag);
  return Buffer.concat([decipher.update(Buffer.from(ciphertext, 'base64url')), decipher.final()]).toString('utf8');
}
