import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { databaseUrlOf, loadConfig, loadSubgraphConfig, SERVICE_NAMES } from '@ots/shared/config';

/**
 * docker-compose.yml as `docker compose up` reads it, without a container engine: the file's
 * `${VARIABLE}` references filled from an .env made as its header says, then each process's
 * environment given to the configuration it loads in production. (.ci/compose-e2e runs the stack.)
 */
const COMPOSE_FILE = readFileSync(new URL('../../docker-compose.yml', import.meta.url), 'utf8');

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- parsed YAML, read field by field by the checks
type ComposeFile = Record<string, any>;

/** Compose's interpolation: `${NAME}`, `${NAME:-default}`, `${NAME-default}`, `${NAME:?error}`, `${NAME?error}`. */
function interpolate(value: unknown, env: Record<string, string>): unknown {
  if (typeof value === 'string') {
    return value.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?)([-?])([^}]*))?\}/g, (_match, name: string, colon: string, kind: string, argument: string) => {
      const set = name in env && (colon !== ':' || env[name] !== '');
      if (set) return env[name]!;
      if (kind === '?') throw new Error(`required variable ${name} is missing a value: ${argument}`);
      return kind === '-' ? argument : '';
    });
  }
  if (Array.isArray(value)) return value.map((item) => interpolate(item, env));
  if (value !== null && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, interpolate(item, env)]));
  return value;
}

function composeWith(env: Record<string, string>): ComposeFile {
  return interpolate(parse(COMPOSE_FILE, { merge: true }), env) as ComposeFile;
}

/** The .env the top of docker-compose.yml has the user make: PEM line breaks written as literal \n. */
function dotEnv(): Record<string, string> {
  const pair = generateKeyPairSync('ed25519');
  const oneLine = (pem: string) => pem.trimEnd().replaceAll('\n', '\\n');
  return {
    CONSOLE_BASE_URL: 'https://ots.example.com',
    POSTGRES_PASSWORD: randomBytes(16).toString('hex'),
    API_KEY_HMAC_SECRET: randomBytes(32).toString('hex'),
    EVENTS_INGEST_SECRET: `whsec_${randomBytes(32).toString('base64')}`,
    WEBHOOK_SECRET_KEY: randomBytes(32).toString('base64'),
    ASSERTION_PRIVATE_KEY: oneLine(pair.privateKey.export({ format: 'pem', type: 'pkcs8' }).toString()),
    ASSERTION_PUBLIC_KEY: oneLine(pair.publicKey.export({ format: 'pem', type: 'spki' }).toString()),
  };
}

/** The services that run the image: the one-shot migrations and the six long-running processes. */
const applicationServices = (compose: ComposeFile) => Object.entries(compose.services as Record<string, ComposeFile>).filter(([, service]) => service.build !== undefined);
const environmentOf = (service: ComposeFile): Record<string, string> => Object.fromEntries(Object.entries(service.environment as Record<string, unknown>).map(([name, value]) => [name, String(value)]));

describe('docker-compose.yml', () => {
  it('starts every process in production with what it needs, the console on its public address', () => {
    const env = dotEnv();
    const services = applicationServices(composeWith(env));
    expect(services.map(([name]) => name).sort()).toEqual(['accounts', 'events', 'fills', 'gateway', 'migrate', 'orders', 'strategies']);
    for (const [name, service] of services.filter(([name]) => name !== 'migrate')) {
      // As each entry point loads it: the gateway (and the admin CLI run in its container) with the API-key secret it hashes keys with.
      const config = (name === 'gateway' ? loadConfig : loadSubgraphConfig)(environmentOf(service));
      expect(config.production, name).toBe(true);
      // The gateway serves the console and runs the admin CLI's owner invitations: both at the address people use.
      expect(config.consoleBaseUrl, name).toBe(env.CONSOLE_BASE_URL);
    }
    // scripts/migrate.ts reads the database URLs alone, outside production's refusals.
    const [, migrate] = services.find(([name]) => name === 'migrate')!;
    const migrations = loadConfig({ ...environmentOf(migrate), NODE_ENV: undefined });
    for (const service of SERVICE_NAMES) expect(databaseUrlOf(migrations, service), service).toBeDefined();
  });

  it('starts each service alone by its production entry point', () => {
    const services = applicationServices(composeWith(dotEnv())).filter(([name]) => name !== 'migrate');
    for (const [name, service] of services) expect(service.command, name).toEqual(['node', `dist/${name}/main.js`]);
  });

  it('gives the API-key secret to the gateway alone, which refuses to start without it', () => {
    const services = applicationServices(composeWith(dotEnv()));
    expect(services.filter(([, service]) => 'API_KEY_HMAC_SECRET' in service.environment).map(([name]) => name)).toEqual(['gateway']);
    const { API_KEY_HMAC_SECRET: _secret, ...gateway } = environmentOf(services.find(([name]) => name === 'gateway')![1]);
    expect(() => loadConfig(gateway)).toThrow('NODE_ENV=production refuses development defaults; set API_KEY_HMAC_SECRET');
  });

  it("refuses to start without the console's public address, saying which variable to set", () => {
    const { CONSOLE_BASE_URL: _unset, ...env } = dotEnv();
    expect(() => composeWith(env)).toThrow(/CONSOLE_BASE_URL is missing a value: set CONSOLE_BASE_URL \(the public https address of your TLS proxy\)/);
    expect(() => composeWith({ ...env, CONSOLE_BASE_URL: '' })).toThrow(/CONSOLE_BASE_URL is missing a value/);
  });
});
