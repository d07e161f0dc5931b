import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

/**
 * Signing secrets at rest: the service must read them back to sign, so they cannot be hashed like
 * API keys; they are sealed with AES-256-GCM under WEBHOOK_SECRET_KEY, so a copy of the database
 * alone does not let anyone forge webhooks to the accounts' receivers. The account id is bound in
 * as associated data: a sealed secret moved to another account's row does not open.
 * Format: `v1.<iv>.<ciphertext>.<tag>`, base64url parts.
 */
const VERSION = 'v1';

export function sealSecret(key: Buffer, secret: string, accountId: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(Buffer.from(accountId, 'utf8'));
  const ciphertext = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
  return [VERSION, iv, ciphertext, cipher.getAuthTag()].map((part) => (typeof part === 'string' ? part : part.toString('base64url'))).join('.');
}

export function openSecret(key: Buffer, sealed: string, accountId: string): string {
  const [version, iv, ciphertext, tag] = sealed.split('.');
  if (version !== VERSION || !iv || !ciphertext || !tag) throw new Error('a sealed webhook secret is malformed');
  const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
  decipher.setAAD(Buffer.from(accountId, 'utf8'));
  decipher.setAuthTag(Buffer.from(tag, 'base64url'));
  return Buffer.concat([decipher.update(Buffer.from(ciphertext, 'base64url')), decipher.final()]).toString('utf8');
}
