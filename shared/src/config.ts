import { createHash, createPrivateKey, createPublicKey, type KeyObject } from 'node:crypto';
import { accessSync, constants } from 'node:fs';
import { z } from 'zod';

export type ServiceName = 'accounts' | 'orders' | 'strategies' | 'fills' | 'events';
export const SERVICE_NAMES: readonly ServiceName[] = ['accounts', 'orders', 'strategies', 'fills', 'events'];

export const DEFAULT_PORTS: Record<ServiceName | 'gateway', number> = {
  gateway: 4000,
  accounts: 4001,
  orders: 4002,
  strategies: 4003,
  fills: 4004,
  events: 4005,
};

export interface Limits {
  bodyBytes: number;
  depth: number;
  aliases: number;
  tokens: number;
  cost: number;
  rateLimitPerSecond: number;
  rateLimitBurst: number;
  /** Gateway instances sharing the rate limit: while Redis is unreachable each grants this share of it. */
  gatewayReplicas: number;
  failedAuthPerSecond: number;
  failedAuthBurst: number;
  /** Key look-ups that miss the caches and read Postgres at once, per gateway instance. */
  keyLookupConcurrency: number;
  gatewayTimeoutMs: number;
  subgraphTimeoutMs: number;
  /** A request's headers must arrive within this, or its connection is closed (slow-header floods). */
  headersTimeoutMs: number;
  /** A request's headers and whole body must arrive within this, or its connection is closed. */
  bodyTimeoutMs: number;
  /** Open connections the gateway keeps at once; unset: derived from the process's file limit. */
  maxConnections: number | undefined;
}

export interface Config {
  production: boolean;
  host: string;
  ports: Record<ServiceName | 'gateway', number>;
  subgraphUrls: Record<ServiceName, string>;
  /** Unset: `npm start` runs an embedded Postgres; services require it (or their own, below). */
  databaseUrl: string | undefined;
  /**
   * `<SERVICE>_DATABASE_URL`: the database server of a subgraph whose team runs its own; a service
   * without one uses `databaseUrl`. Read through `databaseUrlOf`.
   */
  serviceDatabaseUrls: Partial<Record<ServiceName, string>>;
  /** Unset: key look-ups use the in-process cache alone. */
  redisUrl: string | undefined;
  redisKeyPrefix: string;
  /**
   * Hashes API keys: held by the processes that read or make keys, the gateway (with its console)
   * and the admin CLI. A subgraph's process loads its configuration without it (`loadSubgraphConfig`).
   */
  apiKeyHmacSecret: Buffer;
  /** Held by the gateway; absent elsewhere in production. */
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
  /** Where people reach the console (set-password links, the allowed Origin); no trailing slash. */
  consoleBaseUrl: string;
  /** The origins whose pages may call the API (/graphql, /graphql/stream) from a browser; none when empty. */
  corsOrigins: string[];
  /** Each process serves its Prometheus metrics on this port, apart from the public one. */
  metricsPort: number;
  /**
   * Signs what the producers' outbox relays send to the events service (and orders' relay to fills'
   * recovery route); held by events, orders, strategies and fills only (each refuses to start its
   * part without it in production).
   */
  eventsIngestSecret: string | undefined;
  /** Seals webhook signing secrets at rest (AES-256-GCM); held by the events service only. */
  webhookSecretKey: Buffer | undefined;
  /** How often an outbox relay looks for events to forward when it found none. */
  outboxRelayIntervalMs: number;
  /** How often the webhook dispatcher looks for due deliveries when it found none. */
  webhookDispatchIntervalMs: number;
}

/**
 * What every subgraph reads of the configuration: its server (address, limits, the assertion it
 * verifies, whose forwarded headers to believe), its database, where the other subgraphs answer, and
 * the outbox relay's settings. Not the gateway's secrets (the API-key HMAC secret, the assertion's
 * private key), its Redis or its TLS, nor another subgraph's own settings.
 */
export type SubgraphSettings = Pick<
  Config,
  | 'production'
  | 'host'
  | 'ports'
  | 'subgraphUrls'
  | 'databaseUrl'
  | 'serviceDatabaseUrls'
  | 'assertionPublicKey'
  | 'limits'
  | 'trustProxy'
  | 'logLevel'
  | 'metricsPort'
  | 'eventsIngestSecret'
  | 'outboxRelayIntervalMs'
>;

/** What each subgraph reads beyond SubgraphSettings. */
interface OwnSettings {
  accounts: NoSettings;
  orders: NoSettings;
  strategies: NoSettings;
  fills: NoSettings;
  events: Pick<Config, 'webhookSecretKey' | 'webhookDispatchIntervalMs'>;
}
type NoSettings = Record<never, never>;

/** The slice of the configuration that the subgraph `Name` is given (`ServiceRuntime.config`). */
export type ServiceSettings<Name extends ServiceName> = SubgraphSettings & OwnSettings[Name];

const OWN_SETTINGS: { [Name in ServiceName]: (config: SubgraphProcessConfig) => OwnSettings[Name] } = {
  accounts: () => ({}),
  orders: () => ({}),
  strategies: () => ({}),
  fills: () => ({}),
  events: (config) => ({ webhookSecretKey: config.webhookSecretKey, webhookDispatchIntervalMs: config.webhookDispatchIntervalMs }),
};

/** The settings of `service` alone, for its process part: a subgraph cannot read what is not its own. */
export function serviceSettings<Name extends ServiceName>(config: SubgraphProcessConfig, service: Name): ServiceSettings<Name> {
  const common: SubgraphSettings = {
    production: config.production,
    host: config.host,
    ports: config.ports,
    subgraphUrls: config.subgraphUrls,
    databaseUrl: config.databaseUrl,
    serviceDatabaseUrls: config.serviceDatabaseUrls,
    assertionPublicKey: config.assertionPublicKey,
    limits: config.limits,
    trustProxy: config.trustProxy,
    logLevel: config.logLevel,
    metricsPort: config.metricsPort,
    eventsIngestSecret: config.eventsIngestSecret,
    outboxRelayIntervalMs: config.outboxRelayIntervalMs,
  };
  return { ...common, ...OWN_SETTINGS[service](config) };
}

/**
 * What the gateway process reads: its server and TLS, the edge's limits, the API-key secret and the
 * assertion's private key, Redis, the subgraphs' URLs, and the accounts database behind the key
 * store and the console. Not what only the subgraphs hold: the webhook signing key, the relays'
 * ingest secret and their intervals.
 */
export type GatewaySettings = Omit<Config, 'webhookSecretKey' | 'webhookDispatchIntervalMs' | 'eventsIngestSecret' | 'outboxRelayIntervalMs'>;

/** The gateway's settings alone, for its own process: a secret of the subgraphs never reaches it. */
export function gatewaySettings(config: Config): GatewaySettings {
  const { webhookSecretKey: _webhookSecretKey, webhookDispatchIntervalMs: _dispatch, eventsIngestSecret: _ingest, outboxRelayIntervalMs: _relay, ...settings } = config;
  return settings;
}

export class ConfigError extends Error {}

/**
 * Development defaults are derived from fixed labels so that every process of a local run agrees
 * on them without a shared file; production refuses to start on them.
 */
const DEV_HMAC_SECRET = createHash('sha256').update('ots-development-only-api-key-hmac').digest();
const DEV_EVENTS_INGEST_SECRET = `whsec_${createHash('sha256').update('ots-development-only-events-ingest').digest('base64')}`;
const DEV_WEBHOOK_SECRET_KEY = createHash('sha256').update('ots-development-only-webhook-secret-key').digest();
const ED25519_PKCS8_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');
const DEV_ASSERTION_PRIVATE_KEY = createPrivateKey({
  key: Buffer.concat([ED25519_PKCS8_PREFIX, createHash('sha256').update('ots-development-only-assertion-key').digest()]),
  format: 'der',
  type: 'pkcs8',
});

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
/** Node's timers hold at most this many milliseconds; a longer one fires at once. */
const MAX_TIMER_MS = 2_147_483_647;
const MAX_INTEGER = 2_147_483_647;

// Every variable is a string or unset; an empty one counts as unset, as in most shells' `VAR= cmd`.
const unset = (raw: unknown) => (raw === '' ? undefined : raw);

/** Reports a problem with the variable being read; the message follows its name. */
type Problem = (message: string) => typeof z.NEVER;

/** An optional variable, turned into its value by `read`, which calls `problem` when it cannot. */
function variable<T>(read: (raw: string | undefined, problem: Problem) => T) {
  return z.preprocess(
    unset,
    z
      .string()
      .optional()
      .transform((raw, context) =>
        read(raw, (message) => {
          context.addIssue({ code: 'custom', message });
          return z.NEVER;
        }),
      ),
  );
}

/**
 * A whole number in [min, max]. The message quotes the value: none of these is a secret.
 * `what` names the kind for the message ("a port number", "a duration in milliseconds").
 */
function wholeNumber<Fallback extends number | undefined>(fallback: Fallback, min: number, max: number, what: string) {
  return variable((raw, problem) => {
    if (raw === undefined) return fallback;
    const value = /^\d+$/.test(raw) ? Number(raw) : Number.NaN;
    return value >= min && value <= max ? value : problem(`must be ${what} from ${min} to ${max}, got "${raw}"`);
  });
}
const port = (fallback: number) => wholeNumber(fallback, 1, 65_535, 'a port number');
const positive = (fallback: number) => wholeNumber(fallback, 1, MAX_INTEGER, 'a whole number');
const milliseconds = (fallback: number) => wholeNumber(fallback, 1, MAX_TIMER_MS, 'a duration in milliseconds');

/** A URL of one of `protocols`. Not quoted back: a database or Redis URL may hold a password. */
function url(protocols: readonly string[]) {
  const expected = protocols.map((protocol) => `${protocol}//`).join(' or ');
  return variable((raw, problem) =>
    raw === undefined || (URL.canParse(raw) && protocols.includes(new URL(raw).protocol)) ? raw : problem(`must be a URL starting ${expected}`),
  );
}

function pem(raw: string): string {
  // Environment files often carry PEM blocks on one line with literal \n.
  return raw.includes('\\n') ? raw.replace(/\\n/g, '\n') : raw;
}

function ed25519Key(kind: 'private' | 'public') {
  const message = kind === 'private' ? 'must be an Ed25519 private key in PKCS#8 PEM' : 'must be an Ed25519 public key in SPKI PEM';
  return variable((raw, problem) => {
    if (raw === undefined) return undefined;
    try {
      const key = kind === 'private' ? createPrivateKey(pem(raw)) : createPublicKey(pem(raw));
      if (key.asymmetricKeyType === 'ed25519') return key;
    } catch {
      // Reported below, without the key material.
    }
    return problem(message);
  });
}

const readableFile = () =>
  variable((path, problem) => {
    if (path === undefined) return undefined;
    try {
      accessSync(path, constants.R_OK);
      return path;
    } catch {
      return problem('must name a file this process can read');
    }
  });

const PROXY_NAMES = new Set(['loopback', 'linklocal', 'uniquelocal']);
const proxyAddress = z.union([z.ipv4(), z.ipv6(), z.cidrv4(), z.cidrv6()]);

/**
 * `false`, or the addresses of the proxies in front. Believing any hop (`true`) or a hop count would
 * let a client write the X-Forwarded-For it is limited by, so neither is accepted.
 */
const trustProxy = variable((raw, problem): false | string[] => {
  if (raw === undefined || raw === 'false') return false;
  const entries = raw.split(',').map((entry) => entry.trim()).filter(Boolean);
  const bad = entries.filter((entry) => !PROXY_NAMES.has(entry) && !proxyAddress.safeParse(entry).success);
  if (raw === 'true' || /^\d+$/.test(raw) || entries.length === 0 || bad.length > 0) {
    return problem(`takes the addresses of the proxies in front: IPs, CIDRs or loopback, uniquelocal, linklocal, comma-separated, got "${raw}"`);
  }
  return entries;
});

/** Every variable of the README's configuration table, with its range; checked together, reported together. */
const environmentSchema = z.object({
  NODE_ENV: z.preprocess(
    unset,
    z.enum(['production', 'development', 'test'], { message: 'must be production, development or test' }).optional(),
  ),
  DATABASE_URL: url(['postgres:', 'postgresql:']),
  ACCOUNTS_DATABASE_URL: url(['postgres:', 'postgresql:']),
  ORDERS_DATABASE_URL: url(['postgres:', 'postgresql:']),
  STRATEGIES_DATABASE_URL: url(['postgres:', 'postgresql:']),
  FILLS_DATABASE_URL: url(['postgres:', 'postgresql:']),
  EVENTS_DATABASE_URL: url(['postgres:', 'postgresql:']),
  REDIS_URL: url(['redis:', 'rediss:']),
  REDIS_KEY_PREFIX: z.preprocess(unset, z.string().default('ots:')),
  API_KEY_HMAC_SECRET: z.preprocess(unset, z.string().min(32, { message: 'must be at least 32 characters' }).optional()),
  ASSERTION_PRIVATE_KEY: ed25519Key('private'),
  ASSERTION_PUBLIC_KEY: ed25519Key('public'),
  ASSERTION_TTL_SECONDS: wholeNumber(60, 1, 86_400, 'a number of seconds'),
  HOST: z.preprocess(
    unset,
    z
      .union([z.ipv4(), z.ipv6(), z.hostname()], { message: 'must be an IP address or a host name to bind to' })
      .default('127.0.0.1'),
  ),
  GATEWAY_PORT: port(DEFAULT_PORTS.gateway),
  ACCOUNTS_PORT: port(DEFAULT_PORTS.accounts),
  ORDERS_PORT: port(DEFAULT_PORTS.orders),
  STRATEGIES_PORT: port(DEFAULT_PORTS.strategies),
  FILLS_PORT: port(DEFAULT_PORTS.fills),
  EVENTS_PORT: port(DEFAULT_PORTS.events),
  ACCOUNTS_URL: url(['http:', 'https:']),
  ORDERS_URL: url(['http:', 'https:']),
  STRATEGIES_URL: url(['http:', 'https:']),
  FILLS_URL: url(['http:', 'https:']),
  EVENTS_URL: url(['http:', 'https:']),
  EVENTS_INGEST_SECRET: variable((raw, problem) =>
    raw === undefined || /^whsec_[A-Za-z0-9+/]{43}=$/.test(raw)
      ? raw
      : problem('must be whsec_ followed by 32 random bytes in base64 (e.g. `echo whsec_$(openssl rand -base64 32)`)'),
  ),
  WEBHOOK_SECRET_KEY: variable((raw, problem) => {
    if (raw === undefined) return undefined;
    const key = Buffer.from(raw, 'base64');
    return key.length === 32 ? key : problem('must be 32 random bytes in base64 (e.g. `openssl rand -base64 32`)');
  }),
  TLS_CERT_FILE: readableFile(),
  TLS_KEY_FILE: readableFile(),
  TRUST_PROXY: trustProxy,
  LIMIT_BODY_BYTES: positive(100 * 1024),
  LIMIT_DEPTH: positive(10),
  LIMIT_ALIASES: positive(15),
  LIMIT_TOKENS: positive(2000),
  LIMIT_COST: positive(1000),
  RATE_LIMIT_PER_SECOND: positive(50),
  RATE_LIMIT_BURST: positive(100),
  GATEWAY_REPLICAS: wholeNumber(1, 1, 1_000, 'a whole number'),
  FAILED_AUTH_PER_SECOND: positive(5),
  FAILED_AUTH_BURST: positive(30),
  // The gateway's key store has a pool of 10 connections; more would queue in the pool, out of turn.
  KEY_LOOKUP_CONCURRENCY: wholeNumber(4, 1, 10, 'a whole number'),
  GATEWAY_TIMEOUT_MS: milliseconds(10_000),
  SUBGRAPH_TIMEOUT_MS: milliseconds(5_000),
  HEADERS_TIMEOUT_MS: milliseconds(10_000),
  BODY_TIMEOUT_MS: milliseconds(30_000),
  MAX_CONNECTIONS: wholeNumber(undefined, 1, MAX_INTEGER, 'a whole number'),
  METRICS_PORT: port(9464),
  OUTBOX_RELAY_INTERVAL_MS: milliseconds(1_000),
  WEBHOOK_DISPATCH_INTERVAL_MS: milliseconds(1_000),
  CONSOLE_BASE_URL: variable((raw, problem) => {
    if (raw === undefined) return undefined;
    const parsed = URL.canParse(raw) ? new URL(raw) : undefined;
    if (!parsed || !['http:', 'https:'].includes(parsed.protocol) || parsed.search || parsed.hash) {
      return problem('must be an http(s) URL without query or fragment');
    }
    return parsed.toString().replace(/\/+$/, '');
  }),
  CORS_ORIGINS: variable((raw, problem): string[] => {
    if (raw === undefined) return [];
    const origins = raw.split(',').map((entry) => entry.trim()).filter(Boolean);
    // Exact origins, never `*`: each site whose pages may send keys here is named.
    const bad = origins.filter((origin) => !URL.canParse(origin) || !['http:', 'https:'].includes(new URL(origin).protocol) || new URL(origin).origin !== origin);
    if (origins.length === 0 || bad.length > 0) return problem(`takes exact origins, comma-separated, such as https://app.example.com (scheme, host and port only, no path or trailing slash), got "${raw}"`);
    return origins;
  }),
  EMBEDDED_POSTGRES_PORT: port(54_329),
  LOG_LEVEL: z.preprocess(unset, z.enum(LOG_LEVELS, { message: `must be one of ${LOG_LEVELS.join(', ')}` }).optional()),
});

/** Variables whose value is quoted back in an error; the others may hold a secret or a password. */
const QUOTED_ON_ERROR = new Set(['NODE_ENV', 'LOG_LEVEL', 'HOST']);

/** One line per problem, each naming its variable. */
function describeIssues(issues: readonly z.core.$ZodIssue[], env: NodeJS.ProcessEnv): string[] {
  return issues.map((issue) => {
    const name = String(issue.path[0]);
    const quoted = QUOTED_ON_ERROR.has(name) && !issue.message.includes(', got "') ? `, got "${env[name]}"` : '';
    return `${name} ${issue.message}${quoted}`;
  });
}

/** The configuration of a subgraph's process: everything but the API-key secret, which no subgraph reads. */
export type SubgraphProcessConfig = Omit<Config, 'apiKeyHmacSecret'>;

/**
 * The configuration of the gateway, the admin CLI and the scripts: production requires the API-key
 * secret, which they hash keys with.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const { apiKeyHmacSecret, ...config } = readConfig(env, { hashesApiKeys: true });
  return { ...config, apiKeyHmacSecret: apiKeyHmacSecret! };
}

/** The configuration of a subgraph's process: production starts it without the API-key secret. */
export function loadSubgraphConfig(env: NodeJS.ProcessEnv = process.env): SubgraphProcessConfig {
  const { apiKeyHmacSecret: _unread, ...config } = readConfig(env, { hashesApiKeys: false });
  return config;
}

/** The API-key secret is undefined only when `hashesApiKeys` is false, in production, unset. */
function readConfig(env: NodeJS.ProcessEnv, { hashesApiKeys }: { hashesApiKeys: boolean }): SubgraphProcessConfig & { apiKeyHmacSecret: Buffer | undefined } {
  const parsed = environmentSchema.safeParse(env);
  if (!parsed.success) throw new ConfigError(describeIssues(parsed.error.issues, env).join('\n'));
  const e = parsed.data;
  const production = e.NODE_ENV === 'production';
  const problems: string[] = [];

  let assertionPrivateKey = e.ASSERTION_PRIVATE_KEY;
  let assertionPublicKey = e.ASSERTION_PUBLIC_KEY ?? (assertionPrivateKey ? createPublicKey(assertionPrivateKey) : undefined);
  if (assertionPrivateKey && e.ASSERTION_PUBLIC_KEY) {
    const derived = createPublicKey(assertionPrivateKey).export({ format: 'der', type: 'spki' });
    if (!derived.equals(e.ASSERTION_PUBLIC_KEY.export({ format: 'der', type: 'spki' }))) {
      problems.push('ASSERTION_PUBLIC_KEY is not the public half of ASSERTION_PRIVATE_KEY: subgraphs would refuse every assertion');
    }
  }
  const serviceDatabaseUrls: Partial<Record<ServiceName, string>> = {};
  const serviceUrls = {
    accounts: e.ACCOUNTS_DATABASE_URL,
    orders: e.ORDERS_DATABASE_URL,
    strategies: e.STRATEGIES_DATABASE_URL,
    fills: e.FILLS_DATABASE_URL,
    events: e.EVENTS_DATABASE_URL,
  };
  for (const name of SERVICE_NAMES) if (serviceUrls[name]) serviceDatabaseUrls[name] = serviceUrls[name];
  const missing: string[] = [];
  if (production) {
    if (hashesApiKeys && !e.API_KEY_HMAC_SECRET) missing.push('API_KEY_HMAC_SECRET');
    if (!assertionPublicKey) missing.push('ASSERTION_PUBLIC_KEY');
    // A process of one subgraph may hold that subgraph's URL alone; it checks its own when it starts.
    if (!e.DATABASE_URL && Object.keys(serviceDatabaseUrls).length === 0) missing.push('DATABASE_URL');
  } else if (!assertionPublicKey) {
    assertionPrivateKey = DEV_ASSERTION_PRIVATE_KEY;
    assertionPublicKey = createPublicKey(DEV_ASSERTION_PRIVATE_KEY);
  }
  if (missing.length > 0) problems.push(`NODE_ENV=production refuses development defaults; set ${missing.join(', ')}`);
  // Node refuses a headers timeout longer than the whole request's.
  if (e.HEADERS_TIMEOUT_MS > e.BODY_TIMEOUT_MS) problems.push('HEADERS_TIMEOUT_MS must not exceed BODY_TIMEOUT_MS: the body timeout counts from the first byte of the headers');
  if (Boolean(e.TLS_CERT_FILE) !== Boolean(e.TLS_KEY_FILE)) problems.push('TLS_CERT_FILE and TLS_KEY_FILE go together: set both or neither');
  const eventsIngestSecret = e.EVENTS_INGEST_SECRET ?? (production ? undefined : DEV_EVENTS_INGEST_SECRET);
  const webhookSecretKey = e.WEBHOOK_SECRET_KEY ?? (production ? undefined : DEV_WEBHOOK_SECRET_KEY);
  if (problems.length > 0 || !assertionPublicKey) throw new ConfigError(problems.join('\n'));

  const ports = {
    gateway: e.GATEWAY_PORT,
    accounts: e.ACCOUNTS_PORT,
    orders: e.ORDERS_PORT,
    strategies: e.STRATEGIES_PORT,
    fills: e.FILLS_PORT,
    events: e.EVENTS_PORT,
  };
  const subgraphUrl = (name: ServiceName, configured: string | undefined) => configured ?? `http://127.0.0.1:${ports[name]}/graphql`;

  return {
    production,
    host: e.HOST,
    ports,
    subgraphUrls: {
      accounts: subgraphUrl('accounts', e.ACCOUNTS_URL),
      orders: subgraphUrl('orders', e.ORDERS_URL),
      strategies: subgraphUrl('strategies', e.STRATEGIES_URL),
      fills: subgraphUrl('fills', e.FILLS_URL),
      events: subgraphUrl('events', e.EVENTS_URL),
    },
    databaseUrl: e.DATABASE_URL,
    serviceDatabaseUrls,
    redisUrl: e.REDIS_URL,
    redisKeyPrefix: e.REDIS_KEY_PREFIX,
    apiKeyHmacSecret: e.API_KEY_HMAC_SECRET ? Buffer.from(e.API_KEY_HMAC_SECRET, 'utf8') : production ? undefined : DEV_HMAC_SECRET,
    assertionPrivateKey,
    assertionPublicKey,
    assertionTtlSeconds: e.ASSERTION_TTL_SECONDS,
    limits: {
      bodyBytes: e.LIMIT_BODY_BYTES,
      depth: e.LIMIT_DEPTH,
      aliases: e.LIMIT_ALIASES,
      tokens: e.LIMIT_TOKENS,
      cost: e.LIMIT_COST,
      rateLimitPerSecond: e.RATE_LIMIT_PER_SECOND,
      rateLimitBurst: e.RATE_LIMIT_BURST,
      gatewayReplicas: e.GATEWAY_REPLICAS,
      failedAuthPerSecond: e.FAILED_AUTH_PER_SECOND,
      failedAuthBurst: e.FAILED_AUTH_BURST,
      keyLookupConcurrency: e.KEY_LOOKUP_CONCURRENCY,
      gatewayTimeoutMs: e.GATEWAY_TIMEOUT_MS,
      subgraphTimeoutMs: e.SUBGRAPH_TIMEOUT_MS,
      headersTimeoutMs: e.HEADERS_TIMEOUT_MS,
      bodyTimeoutMs: e.BODY_TIMEOUT_MS,
      maxConnections: e.MAX_CONNECTIONS,
    },
    tls: e.TLS_CERT_FILE && e.TLS_KEY_FILE ? { certFile: e.TLS_CERT_FILE, keyFile: e.TLS_KEY_FILE } : undefined,
    trustProxy: e.TRUST_PROXY,
    logLevel: e.LOG_LEVEL ?? (e.NODE_ENV === 'test' ? 'warn' : 'info'),
    consoleBaseUrl:
      e.CONSOLE_BASE_URL ?? `${e.TLS_CERT_FILE ? 'https' : 'http'}://${urlHostOf(e.HOST)}:${ports.gateway}`,
    corsOrigins: e.CORS_ORIGINS,
    metricsPort: e.METRICS_PORT,
    eventsIngestSecret,
    webhookSecretKey,
    outboxRelayIntervalMs: e.OUTBOX_RELAY_INTERVAL_MS,
    webhookDispatchIntervalMs: e.WEBHOOK_DISPATCH_INTERVAL_MS,
  };
}

/** The database of `service` (its schema and migrations): its own server's URL, else DATABASE_URL's. */
/** HOST as a URL's host: a wildcard address is reached on the loopback, an IPv6 address in brackets. */
function urlHostOf(host: string): string {
  if (host === '0.0.0.0' || host === '::') return '127.0.0.1';
  return host.includes(':') ? `[${host}]` : host;
}

export function databaseUrlOf(config: Pick<Config, 'databaseUrl' | 'serviceDatabaseUrls'>, service: ServiceName): string | undefined {
  return config.serviceDatabaseUrls[service] ?? config.databaseUrl;
}

/** What to set when `service` has no database: for messages. */
export function databaseVariablesOf(service: ServiceName): string {
  return `${service.toUpperCase()}_DATABASE_URL or DATABASE_URL`;
}

/** For process entry points: a configuration mistake is one clear line and exit code 1, not a stack trace. */
export function loadConfigOrExit(env: NodeJS.ProcessEnv = process.env): Config {
  return orExit(() => loadConfig(env));
}

/** `loadSubgraphConfig` for a subgraph's entry point, as `loadConfigOrExit`. */
export function loadSubgraphConfigOrExit(env: NodeJS.ProcessEnv = process.env): SubgraphProcessConfig {
  return orExit(() => loadSubgraphConfig(env));
}

function orExit<Loaded>(load: () => Loaded): Loaded {
  try {
    return load();
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`${error.message}\n`);
    process.exit(1);
  }
}
