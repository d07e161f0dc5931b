import { createHash, createPrivateKey, createPublicKey, type KeyObject } from 'node:crypto';

export type ServiceName = 'accounts' | 'orders' | 'strategies' | 'fills';
export const SERVICE_NAMES: readonly ServiceName[] = ['accounts', 'orders', 'strategies', 'fills'];

export const DEFAULT_PORTS: Record<ServiceName | 'gateway', number> = {
  gateway: 4000,
  accounts: 4001,
  orders: 4002,
  strategies: 4003,
  fills: 4004,
};

export interface Limits {
  bodyBytes: number;
  depth: number;
  aliases: number;
  tokens: number;
  cost: number;
  rateLimitPerSecond: number;
  rateLimitBurst: number;
  failedAuthPerSecond: number;
  failedAuthBurst: number;
  gatewayTimeoutMs: number;
  subgraphTimeoutMs: number;
}

export interface Config {
  production: boolean;
  host: string;
  ports: Record<ServiceName | 'gateway', number>;
  subgraphUrls: Record<ServiceName, string>;
  /** Unset: `npm start` runs an embedded Postgres; services require it. */
  databaseUrl: string | undefined;
  /** Unset: key look-ups use the in-process cache alone. */
  redisUrl: string | undefined;
  redisKeyPrefix: string;
  apiKeyHmacSecret: Buffer;
  /** Held by the gateway, and by fills for its recovery sweeper; absent elsewhere in production. */
  assertionPrivateKey: KeyObject | undefined;
  assertionPublicKey: KeyObject;
  assertionTtlSeconds: number;
  limits: Limits;
  tls: { certFile: string; keyFile: string } | undefined;
  /**
   * Whose X-Forwarded-* headers to believe: nobody's, or those of the proxies at these addresses
   * (CIDRs or proxy-addr's names). The client address that failed authentications are limited by comes from them.
   */
  trustProxy: false | string[];
  logLevel: string;
  /** How often the fills sweeper retries fills left pending by a crash or timeout. */
  fillSweepIntervalMs: number;
  /** A pending fill younger than this belongs to a request still in flight; the sweeper leaves it alone. */
  fillSweepMinAgeMs: number;
  /** Where people reach the console (set-password links, the allowed Origin); no trailing slash. */
  consoleBaseUrl: string;
}

export class ConfigError extends Error {}

/**
 * Development defaults are derived from fixed labels so that every process of a local run agrees
 * on them without a shared file; production refuses to start on them.
 */
const DEV_HMAC_SECRET = createHash('sha256').update('ots-development-only-api-key-hmac').digest();
const ED25519_PKCS8_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');
const DEV_ASSERTION_PRIVATE_KEY = createPrivateKey({
  key: Buffer.concat([ED25519_PKCS8_PREFIX, createHash('sha256').update('ots-development-only-assertion-key').digest()]),
  format: 'der',
  type: 'pkcs8',
});

function int(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw)) throw new ConfigError(`${name} must be a whole number, got "${raw}"`);
  return Number(raw);
}

function pem(raw: string): string {
  // Environment files often carry PEM blocks on one line with literal \n.
  return raw.includes('\\n') ? raw.replace(/\\n/g, '\n') : raw;
}

function parseTrustProxy(raw: string | undefined): false | string[] {
  if (raw === undefined || raw === '' || raw === 'false') return false;
  // Believing any hop (`true`) or a hop count lets a client write the X-Forwarded-For it is limited by.
  if (raw === 'true' || /^\d+$/.test(raw)) {
    throw new ConfigError('TRUST_PROXY takes the addresses of the proxies in front: CIDRs or loopback, uniquelocal, linklocal, comma-separated');
  }
  return raw.split(',').map((entry) => entry.trim()).filter(Boolean);
}

function parseConsoleBaseUrl(raw: string | undefined, fallback: string): string {
  if (raw === undefined || raw === '') return fallback;
  let url: URL | undefined;
  try {
    url = new URL(raw);
  } catch {
    url = undefined;
  }
  if (!url || !['http:', 'https:'].includes(url.protocol) || url.search || url.hash) {
    throw new ConfigError(`CONSOLE_BASE_URL must be an http(s) URL without query or fragment, got "${raw}"`);
  }
  return url.toString().replace(/\/+$/, '');
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const production = env.NODE_ENV === 'production';
  const missing: string[] = [];

  let apiKeyHmacSecret = DEV_HMAC_SECRET;
  if (env.API_KEY_HMAC_SECRET) {
    if (env.API_KEY_HMAC_SECRET.length < 32) throw new ConfigError('API_KEY_HMAC_SECRET must be at least 32 characters');
    apiKeyHmacSecret = Buffer.from(env.API_KEY_HMAC_SECRET, 'utf8');
  } else if (production) {
    missing.push('API_KEY_HMAC_SECRET');
  }

  let assertionPrivateKey: KeyObject | undefined;
  let assertionPublicKey: KeyObject;
  if (env.ASSERTION_PRIVATE_KEY) assertionPrivateKey = createPrivateKey(pem(env.ASSERTION_PRIVATE_KEY));
  if (env.ASSERTION_PUBLIC_KEY) {
    assertionPublicKey = createPublicKey(pem(env.ASSERTION_PUBLIC_KEY));
  } else if (assertionPrivateKey) {
    assertionPublicKey = createPublicKey(assertionPrivateKey);
  } else if (production) {
    missing.push('ASSERTION_PUBLIC_KEY');
    assertionPublicKey = createPublicKey(DEV_ASSERTION_PRIVATE_KEY);
  } else {
    assertionPrivateKey = DEV_ASSERTION_PRIVATE_KEY;
    assertionPublicKey = createPublicKey(DEV_ASSERTION_PRIVATE_KEY);
  }
  if (production && !env.DATABASE_URL) missing.push('DATABASE_URL');
  if (missing.length > 0) {
    throw new ConfigError(`NODE_ENV=production refuses development defaults; set ${missing.join(', ')}`);
  }

  const host = env.HOST ?? '127.0.0.1';
  const ports = {
    gateway: int(env, 'GATEWAY_PORT', DEFAULT_PORTS.gateway),
    accounts: int(env, 'ACCOUNTS_PORT', DEFAULT_PORTS.accounts),
    orders: int(env, 'ORDERS_PORT', DEFAULT_PORTS.orders),
    strategies: int(env, 'STRATEGIES_PORT', DEFAULT_PORTS.strategies),
    fills: int(env, 'FILLS_PORT', DEFAULT_PORTS.fills),
  };
  const subgraphUrl = (name: ServiceName) =>
    env[`${name.toUpperCase()}_URL`] ?? `http://127.0.0.1:${ports[name]}/graphql`;

  const tlsCert = env.TLS_CERT_FILE;
  const tlsKey = env.TLS_KEY_FILE;
  if (Boolean(tlsCert) !== Boolean(tlsKey)) throw new ConfigError('TLS_CERT_FILE and TLS_KEY_FILE go together');
  const consoleBaseUrl = parseConsoleBaseUrl(env.CONSOLE_BASE_URL, `${tlsCert ? 'https' : 'http'}://${['0.0.0.0', '::'].includes(host) ? '127.0.0.1' : host}:${ports.gateway}`);

  return {
    production,
    host,
    ports,
    subgraphUrls: {
      accounts: subgraphUrl('accounts'),
      orders: subgraphUrl('orders'),
      strategies: subgraphUrl('strategies'),
      fills: subgraphUrl('fills'),
    },
    databaseUrl: env.DATABASE_URL || undefined,
    redisUrl: env.REDIS_URL || undefined,
    redisKeyPrefix: env.REDIS_KEY_PREFIX ?? 'ots:',
    apiKeyHmacSecret,
    assertionPrivateKey,
    assertionPublicKey,
    assertionTtlSeconds: int(env, 'ASSERTION_TTL_SECONDS', 60),
    limits: {
      bodyBytes: int(env, 'LIMIT_BODY_BYTES', 100 * 1024),
      depth: int(env, 'LIMIT_DEPTH', 10),
      aliases: int(env, 'LIMIT_ALIASES', 15),
      tokens: int(env, 'LIMIT_TOKENS', 2000),
      cost: int(env, 'LIMIT_COST', 1000),
      rateLimitPerSecond: int(env, 'RATE_LIMIT_PER_SECOND', 50),
      rateLimitBurst: int(env, 'RATE_LIMIT_BURST', 100),
      failedAuthPerSecond: int(env, 'FAILED_AUTH_PER_SECOND', 5),
      failedAuthBurst: int(env, 'FAILED_AUTH_BURST', 30),
      gatewayTimeoutMs: int(env, 'GATEWAY_TIMEOUT_MS', 10_000),
      subgraphTimeoutMs: int(env, 'SUBGRAPH_TIMEOUT_MS', 5_000),
    },
    tls: tlsCert && tlsKey ? { certFile: tlsCert, keyFile: tlsKey } : undefined,
    trustProxy: parseTrustProxy(env.TRUST_PROXY),
    logLevel: env.LOG_LEVEL ?? (env.NODE_ENV === 'test' ? 'warn' : 'info'),
    fillSweepIntervalMs: int(env, 'FILL_SWEEP_INTERVAL_MS', 5_000),
    fillSweepMinAgeMs: int(env, 'FILL_SWEEP_MIN_AGE_MS', 10_000),
    consoleBaseUrl,
  };
}

/** For process entry points: a configuration mistake is one clear line and exit code 1, not a stack trace. */
export function loadConfigOrExit(env: NodeJS.ProcessEnv = process.env): Config {
  try {
    return loadConfig(env);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`${error.message}\n`);
    process.exit(1);
  }
}
