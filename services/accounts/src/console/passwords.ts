import { hash, verify, type Algorithm } from '@node-rs/argon2';

/**
 * Passwords are stored as argon2id PHC strings (`$argon2id$v=19$m=19456,t=2,p=1$salt$hash`) at
 * OWASP's first recommended setting: 19 MiB of memory, 2 passes, 1 lane. argon2id is the
 * contract's first choice and OWASP's; `@node-rs/argon2` ships prebuilt binaries inside its npm
 * packages (nothing is downloaded or compiled at install), runs off the event loop, and its
 * `verify` compares in constant time. The parameters travel in the stored string, so raising them
 * later keeps every existing password working.
 */
const ARGON2ID = 2 as Algorithm;
const OPTIONS = { algorithm: ARGON2ID, memoryCost: 19_456, timeCost: 2, parallelism: 1 };

export function hashPassword(password: string): Promise<string> {
  return hash(password, OPTIONS);
}

/**
 * A fixed hash checked when the email is unknown or has no password yet, so that those failures
 * take as long as a wrong password and the answer's timing does not tell which emails are owners.
 */
let decoy: Promise<string> | undefined;

export async function verifyPassword(storedHash: string | null, password: string): Promise<boolean> {
  if (storedHash === null) {
    decoy ??= hashPassword('decoy password, never matched');
    await verify(await decoy, password).catch(() => false);
    return false;
  }
  return verify(storedHash, password).catch(() => false);
}
