import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ConfigError, databaseUrlOf, gatewaySettings, loadConfig, loadSubgraphConfig, serviceSettings } from '../src/config.ts';

function problemsOf(env: Record<string, string>, load: (env: Record<string, string>) => unknown = loadConfig): string[] {
  try {
    load(env);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message.split('\n');
  }
  throw new Error(`accepted ${JSON.stringify(env)}`);
}

describe('configuration', () => {
  it('needs nothing: the defaults the README lists', () => {
    const config = loadConfig({});
    expect(config.host).toBe('127.0.0.1');
    expect(config.ports).toEqual({ gateway: 4000, accounts: 4001, orders: 4002, strategies: 4003, fills: 4004, events: 4005 });
    expect(config.subgraphUrls.events).toBe('http://127.0.0.1:4005/graphql');
    expect(config.subgraphUrls.orders).toBe('http://127.0.0.1:4002/graphql');
    expect(config.limits).toEqual({
      bodyBytes: 102_400,
      depth: 10,
      aliases: 15,
      tokens: 2000,
      cost: 1000,
      rateLimitPerSecond: 50,
      rateLimitBurst: 100,
      gatewayReplicas: 1,
      failedAuthPerSecond: 5,
      failedAuthBurst: 30,
      keyLookupConcurrency: 4,
      gatewayTimeoutMs: 10_000,
      subgraphTimeoutMs: 5_000,
      headersTimeoutMs: 10_000,
      bodyTimeoutMs: 30_000,
      maxConnections: undefined,
    });
    expect(config.redisKeyPrefix).toBe('ots:');
    expect(config.trustProxy).toBe(false);
    expect(config.logLevel).toBe('info');
    expect(loadConfig({ NODE_ENV: 'test' }).logLevel).toBe('warn');
    expect(config.assertionPrivateKey).toBeDefined();
    expect(config.metricsPort).toBe(9464);
    expect(config.consoleBaseUrl).toBe('http://127.0.0.1:4000');
    expect(config.outboxRelayIntervalMs).toBe(1000);
    expect(config.webhookDispatchIntervalMs).toBe(1000);
    expect(config.eventsIngestSecret).toMatch(/^whsec_/);
    expect(config.webhookSecretKey?.length).toBe(32);
  });

  it("builds the console's default address from HOST: a wildcard on the loopback, an IPv6 address in brackets", () => {
    const consoleOf = (HOST: string) => loadConfig({ HOST }).consoleBaseUrl;
    expect(consoleOf('0.0.0.0')).toBe('http://127.0.0.1:4000');
    expect(consoleOf('::')).toBe('http://127.0.0.1:4000');
    expect(consoleOf('::1')).toBe('http://[::1]:4000');
    expect(new URL(consoleOf('fd00::5')).hostname).toBe('[fd00::5]');
    expect(consoleOf('api.example.com')).toBe('http://api.example.com:4000');
  });

  it('an empty variable counts as unset', () => {
    expect(loadConfig({ GATEWAY_PORT: '', LOG_LEVEL: '', HOST: '' }).ports.gateway).toBe(4000);
  });

  it('takes values in range', () => {
    const config = loadConfig({ GATEWAY_PORT: '1', ORDERS_PORT: '65535', LOG_LEVEL: 'debug', LIMIT_DEPTH: '3', HOST: '0.0.0.0', TRUST_PROXY: 'loopback, 10.0.0.0/8', CORS_ORIGINS: 'https://app.example.com, http://127.0.0.1:5173' });
    expect(config.ports.gateway).toBe(1);
    expect(config.ports.orders).toBe(65_535);
    expect(config.subgraphUrls.orders).toBe('http://127.0.0.1:65535/graphql');
    expect(config.logLevel).toBe('debug');
    expect(config.limits.depth).toBe(3);
    expect(config.trustProxy).toEqual(['loopback', '10.0.0.0/8']);
    expect(config.corsOrigins).toEqual(['https://app.example.com', 'http://127.0.0.1:5173']);
  });

  it.each([
    ['GATEWAY_PORT', '99999', 'GATEWAY_PORT must be a port number from 1 to 65535, got "99999"'],
    ['FILLS_PORT', '0', 'FILLS_PORT must be a port number from 1 to 65535, got "0"'],
    ['EMBEDDED_POSTGRES_PORT', '5432x', 'EMBEDDED_POSTGRES_PORT must be a port number from 1 to 65535, got "5432x"'],
    ['LOG_LEVEL', 'verbose', 'LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent, got "verbose"'],
    ['NODE_ENV', 'prod', 'NODE_ENV must be production, development or test, got "prod"'],
    ['LIMIT_DEPTH', '0', 'LIMIT_DEPTH must be a whole number from 1 to 2147483647, got "0"'],
    ['RATE_LIMIT_BURST', '-5', 'RATE_LIMIT_BURST must be a whole number from 1 to 2147483647, got "-5"'],
    ['FAILED_AUTH_PER_SECOND', '2.5', 'FAILED_AUTH_PER_SECOND must be a whole number from 1 to 2147483647, got "2.5"'],
    ['GATEWAY_TIMEOUT_MS', '3000000000', 'GATEWAY_TIMEOUT_MS must be a duration in milliseconds from 1 to 2147483647, got "3000000000"'],
    ['ASSERTION_TTL_SECONDS', '1e3', 'ASSERTION_TTL_SECONDS must be a number of seconds from 1 to 86400, got "1e3"'],
    ['ORDERS_URL', 'orders:4002', 'ORDERS_URL must be a URL starting http:// or https://'],
    ['REDIS_URL', 'localhost:6379', 'REDIS_URL must be a URL starting redis:// or rediss://'],
    ['HOST', 'not a host', 'HOST must be an IP address or a host name to bind to, got "not a host"'],
    ['TRUST_PROXY', 'true', 'TRUST_PROXY takes the addresses of the proxies in front: IPs, CIDRs or loopback, uniquelocal, linklocal, comma-separated, got "true"'],
    ['TRUST_PROXY', 'loopback,10.0.0.0/99', 'TRUST_PROXY takes the addresses of the proxies in front: IPs, CIDRs or loopback, uniquelocal, linklocal, comma-separated, got "loopback,10.0.0.0/99"'],
    ['CORS_ORIGINS', '*', 'CORS_ORIGINS takes exact origins, comma-separated, such as https://app.example.com (scheme, host and port only, no path or trailing slash), got "*"'],
    ['CORS_ORIGINS', 'https://app.example.com/', 'CORS_ORIGINS takes exact origins, comma-separated, such as https://app.example.com (scheme, host and port only, no path or trailing slash), got "https://app.example.com/"'],
    ['TLS_CERT_FILE', '/nonexistent/cert.pem', 'TLS_CERT_FILE must name a file this process can read'],
    ['EVENTS_PORT', '70000', 'EVENTS_PORT must be a port number from 1 to 65535, got "70000"'],
    ['METRICS_PORT', '0', 'METRICS_PORT must be a port number from 1 to 65535, got "0"'],
    ['CONSOLE_BASE_URL', 'https://example.com/?x=1', 'CONSOLE_BASE_URL must be an http(s) URL without query or fragment'],
    ['EVENTS_INGEST_SECRET', 'whsec_short', 'EVENTS_INGEST_SECRET must be whsec_ followed by 32 random bytes in base64 (e.g. `echo whsec_$(openssl rand -base64 32)`)'],
    ['WEBHOOK_SECRET_KEY', 'c2hvcnQ=', 'WEBHOOK_SECRET_KEY must be 32 random bytes in base64 (e.g. `openssl rand -base64 32`)'],
    ['OUTBOX_RELAY_INTERVAL_MS', '0', 'OUTBOX_RELAY_INTERVAL_MS must be a duration in milliseconds from 1 to 2147483647, got "0"'],
    ['MAX_CONNECTIONS', '0', 'MAX_CONNECTIONS must be a whole number from 1 to 2147483647, got "0"'],
  ])('%s=%s is one line naming the variable', (name, value, line) => {
    expect(problemsOf({ [name]: value })).toEqual([line]);
  });

  it('never quotes a value that may be a secret', () => {
    const problems = problemsOf({
      DATABASE_URL: 'mysql://app:hunter2-password@db/app',
      API_KEY_HMAC_SECRET: 'short-secret-value',
      ASSERTION_PRIVATE_KEY: '-----BEGIN PRIVATE KEY-----\\nnot-a-key\\n-----END PRIVATE KEY-----',
    });
    expect(problems).toEqual([
      'DATABASE_URL must be a URL starting postgres:// or postgresql://',
      'API_KEY_HMAC_SECRET must be at least 32 characters',
      'ASSERTION_PRIVATE_KEY must be an Ed25519 private key in PKCS#8 PEM',
    ]);
    expect(problems.join('\n')).not.toMatch(/hunter2|short-secret|not-a-key/);
  });

  it('reports every problem at once, one line each', () => {
    expect(problemsOf({ GATEWAY_PORT: 'abc', LOG_LEVEL: 'loud', LIMIT_COST: '0' })).toEqual([
      'GATEWAY_PORT must be a port number from 1 to 65535, got "abc"',
      'LIMIT_COST must be a whole number from 1 to 2147483647, got "0"',
      'LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent, got "loud"',
    ]);
  });

  it('checks what goes together', () => {
    const rsa = generateKeyPairSync('rsa', { modulusLength: 1024 }).privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();
    expect(problemsOf({ ASSERTION_PRIVATE_KEY: rsa })).toEqual(['ASSERTION_PRIVATE_KEY must be an Ed25519 private key in PKCS#8 PEM']);
    const one = generateKeyPairSync('ed25519');
    const other = generateKeyPairSync('ed25519');
    expect(
      problemsOf({
        ASSERTION_PRIVATE_KEY: one.privateKey.export({ format: 'pem', type: 'pkcs8' }).toString(),
        ASSERTION_PUBLIC_KEY: other.publicKey.export({ format: 'pem', type: 'spki' }).toString(),
      }),
    ).toEqual(['ASSERTION_PUBLIC_KEY is not the public half of ASSERTION_PRIVATE_KEY: subgraphs would refuse every assertion']);
    // The one-line form of environment files, with literal \n, is the same key.
    const oneLine = one.privateKey.export({ format: 'pem', type: 'pkcs8' }).toString().replace(/\n/g, '\\n');
    expect(loadConfig({ ASSERTION_PRIVATE_KEY: oneLine }).assertionPublicKey.equals(one.publicKey)).toBe(true);
    expect(problemsOf({ HEADERS_TIMEOUT_MS: '40000' })).toEqual([
      'HEADERS_TIMEOUT_MS must not exceed BODY_TIMEOUT_MS: the body timeout counts from the first byte of the headers',
    ]);
    expect(problemsOf({ TLS_CERT_FILE: '/etc/hostname' })).toEqual(['TLS_CERT_FILE and TLS_KEY_FILE go together: set both or neither']);
    expect(problemsOf({ NODE_ENV: 'production' })).toEqual([
      'NODE_ENV=production refuses development defaults; set API_KEY_HMAC_SECRET, ASSERTION_PUBLIC_KEY, DATABASE_URL',
    ]);
  });

  it('requires the API-key secret in production only of the processes that hash keys, not of a subgraph', () => {
    expect(problemsOf({ NODE_ENV: 'production' }, loadSubgraphConfig)).toEqual(['NODE_ENV=production refuses development defaults; set ASSERTION_PUBLIC_KEY, DATABASE_URL']);
    const subgraph = {
      NODE_ENV: 'production',
      DATABASE_URL: 'postgres://ots@db/ots',
      ASSERTION_PUBLIC_KEY: generateKeyPairSync('ed25519').publicKey.export({ format: 'pem', type: 'spki' }).toString(),
    };
    expect(loadSubgraphConfig(subgraph)).not.toHaveProperty('apiKeyHmacSecret');
    // Given it all the same, a subgraph still does not hold it.
    expect(loadSubgraphConfig({ ...subgraph, API_KEY_HMAC_SECRET: 'x'.repeat(32) })).not.toHaveProperty('apiKeyHmacSecret');
    expect(problemsOf(subgraph)).toEqual(['NODE_ENV=production refuses development defaults; set API_KEY_HMAC_SECRET']);
  });

  it('gives each service its own <SERVICE>_DATABASE_URL where one is set, else DATABASE_URL', () => {
    const config = loadConfig({ DATABASE_URL: 'postgres://app@shared/ots', ORDERS_DATABASE_URL: 'postgres://orders@orders-db/orders' });
    expect(databaseUrlOf(config, 'orders')).toBe('postgres://orders@orders-db/orders');
    expect(databaseUrlOf(config, 'fills')).toBe('postgres://app@shared/ots');
    expect(problemsOf({ FILLS_DATABASE_URL: 'mysql://fills:hunter2@db/fills' })).toEqual(['FILLS_DATABASE_URL must be a URL starting postgres:// or postgresql://']);
    // A process of one subgraph holds that subgraph's database alone.
    const production = {
      NODE_ENV: 'production',
      API_KEY_HMAC_SECRET: 'x'.repeat(32),
      ASSERTION_PUBLIC_KEY: generateKeyPairSync('ed25519').publicKey.export({ format: 'pem', type: 'spki' }).toString(),
    };
    const orders = loadConfig({ ...production, ORDERS_DATABASE_URL: 'postgres://orders@orders-db/orders' });
    expect([databaseUrlOf(orders, 'orders'), databaseUrlOf(orders, 'accounts')]).toEqual(['postgres://orders@orders-db/orders', undefined]);
  });
});

describe('each process is given its slice of the configuration', () => {
  const config = loadConfig({ NODE_ENV: 'test' });

  it('a subgraph never holds the gateway\'s secrets, and only events holds the webhook signing key', () => {
    const orders = serviceSettings(config, 'orders') as Record<string, unknown>;
    for (const secret of ['apiKeyHmacSecret', 'assertionPrivateKey', 'webhookSecretKey', 'redisUrl', 'tls']) expect(orders).not.toHaveProperty(secret);
    expect(orders.eventsIngestSecret).toBe(config.eventsIngestSecret);
    expect(serviceSettings(config, 'events').webhookSecretKey).toEqual(config.webhookSecretKey);
  });

  it('the gateway never holds what only the subgraphs hold', () => {
    const gateway = gatewaySettings(config) as Record<string, unknown>;
    for (const secret of ['webhookSecretKey', 'eventsIngestSecret']) expect(gateway).not.toHaveProperty(secret);
    expect(gateway.apiKeyHmacSecret).toEqual(config.apiKeyHmacSecret);
    expect(gateway.limits).toEqual(config.limits);
  });
});
