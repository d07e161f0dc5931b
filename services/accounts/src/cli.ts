import { parseArgs } from 'node:util';
import { databaseUrlOf, loadConfigOrExit } from '@ots/shared/config';
import { ensureDevDatabase } from '@ots/shared/dev-database';
import { receiveId } from '@ots/shared/ids';
import { createLogger } from '@ots/shared/logger';
import { DEFAULT_ROLL_GRACE_MS, nameProblem, parseDuration } from './domain.ts';
import { openKeyStore } from './key-store.ts';
import * as keys from './operations.ts';
import { KeyManagementError, MAX_ACCOUNT_NAME_LENGTH, type KeyManagement } from './operations.ts';
import type { ApiKeyRow } from './repository.ts';
import { inviteOwner, resetOwnerPassword, type ConsoleDeps } from './console/operations.ts';

/** The operator CLI of contract section 5: `npm run admin -- <command> [--json]`. */
const USAGE = `usage: npm run admin -- <command> [--json]
  account create --name NAME
  account disable-api ACCOUNT_ID
  account enable-api ACCOUNT_ID
  key create --account ACCOUNT_ID [--name LABEL] [--expires-in DURATION]
  key list --account ACCOUNT_ID
  key revoke KEY_ID
  key roll KEY_ID [--grace DURATION]
  key events --account ACCOUNT_ID
  owner invite --account ACCOUNT_ID --email EMAIL
  owner reset-password OWNER_ID
DURATION is a whole number and a unit: 30s, 15m, 12h, 90d.`;

class UsageError extends Error {}

interface Parsed {
  words: string[];
  options: Map<string, string>;
  json: boolean;
}

const VALUE_OPTIONS = ['--name', '--account', '--expires-in', '--grace', '--email'];

/**
 * `node:util`'s parseArgs splits the arguments (`--name=x` and `--name x` alike); it runs non-strict
 * so that each mistake is reported in this CLI's own one-line words, checked below from its tokens.
 */
function parseArguments(argv: string[]): Parsed {
  const { tokens } = parseArgs({
    args: argv,
    options: {
      ...Object.fromEntries(VALUE_OPTIONS.map((name) => [name.slice(2), { type: 'string' as const }])),
      json: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
    allowPositionals: true,
    strict: false,
    tokens: true,
  });
  const words: string[] = [];
  const options = new Map<string, string>();
  let json = false;
  for (const token of tokens) {
    if (token.kind === 'positional') words.push(token.value);
    else if (token.kind === 'option-terminator') throw new UsageError('unknown option --');
    else if (token.name === 'help') throw new UsageError(USAGE);
    else if (token.name === 'json') {
      if (token.value !== undefined) throw new UsageError('--json takes no value');
      json = true;
    } else {
      const name = token.rawName;
      if (!VALUE_OPTIONS.includes(name)) throw new UsageError(`unknown option ${name}`);
      const value = token.value;
      // `--name --json` is a forgotten value, not an account named "--json".
      if (value === undefined || value === '' || (!token.inlineValue && value.startsWith('--'))) throw new UsageError(`${name} needs a value`);
      options.set(name, value);
    }
  }
  return { words, options, json };
}

function allowOnly(parsed: Parsed, allowed: string[], positionals: number): void {
  for (const name of parsed.options.keys()) if (!allowed.includes(name)) throw new UsageError(`${name} does not apply to ${parsed.words.slice(0, 2).join(' ')}`);
  if (parsed.words.length - 2 > positionals) throw new UsageError(`unexpected argument ${parsed.words[2 + positionals]}`);
}

function required(parsed: Parsed, name: string): string {
  const value = parsed.options.get(name);
  if (value === undefined) throw new UsageError(`${name} is required`);
  return value;
}

function positional(parsed: Parsed, what: string): string {
  const value = parsed.words[2];
  if (value === undefined) throw new UsageError(`${what} is required`);
  return value;
}

function duration(parsed: Parsed, name: string): number | undefined {
  const text = parsed.options.get(name);
  if (text === undefined) return undefined;
  const ms = parseDuration(text);
  if (ms === undefined) throw new UsageError(`${name} takes a whole number and a unit (s, m, h or d) up to 36500d, e.g. 90d; got "${text}"`);
  if (name === '--expires-in' && ms === 0) throw new UsageError('--expires-in must be longer than 0s: the key would be expired already');
  return ms;
}

const MAX_LABEL_LENGTH = 100;

function label(parsed: Parsed): string | null {
  const name = parsed.options.get('--name');
  const problem = name === undefined ? undefined : nameProblem('--name', name, MAX_LABEL_LENGTH);
  if (problem) throw new UsageError(problem);
  return name ?? null;
}

/** Checked before connecting too, with the rule `createAccount` applies. */
function accountName(parsed: Parsed): string {
  const name = required(parsed, '--name');
  const problem = nameProblem('account name', name.trim(), MAX_ACCOUNT_NAME_LENGTH);
  if (problem) throw new UsageError(problem);
  return name;
}

function keyView(key: ApiKeyRow) {
  return {
    id: key.id,
    name: key.name,
    environment: key.environment,
    displayPrefix: key.display_prefix,
    createdAt: key.created_at.toISOString(),
    expiresAt: key.expires_at?.toISOString() ?? null,
    lastUsedAt: key.last_used_at?.toISOString() ?? null,
    revokedAt: key.revoked_at?.toISOString() ?? null,
  };
}

type Command = (parsed: Parsed, management: KeyManagement, owners: ConsoleDeps) => Promise<{ json: Record<string, unknown>; text: string }>;

/** Every command checks its arguments before `run` opens a connection, so a bad call changes nothing. */
const COMMANDS: Record<string, { check(parsed: Parsed): void; run: Command }> = {
  'account create': {
    check: (p) => (allowOnly(p, ['--name'], 0), accountName(p), undefined),
    run: async (p, m) => {
      const account = await keys.createAccount(m, accountName(p));
      return { json: { accountId: account.id }, text: `created account ${account.id} (${account.name})` };
    },
  },
  'account disable-api': {
    check: (p) => (allowOnly(p, [], 1), positional(p, 'ACCOUNT_ID'), undefined),
    run: async (p, m) => {
      const result = await keys.setApiAccess(m, receiveId(positional(p, 'ACCOUNT_ID')), false);
      return { json: result, text: `API access disabled for account ${result.accountId}` };
    },
  },
  'account enable-api': {
    check: (p) => (allowOnly(p, [], 1), positional(p, 'ACCOUNT_ID'), undefined),
    run: async (p, m) => {
      const result = await keys.setApiAccess(m, receiveId(positional(p, 'ACCOUNT_ID')), true);
      return { json: result, text: `API access enabled for account ${result.accountId}` };
    },
  },
  'key create': {
    check: (p) => (allowOnly(p, ['--account', '--name', '--expires-in'], 0), required(p, '--account'), label(p), duration(p, '--expires-in'), undefined),
    run: async (p, m) => {
      const { key, apiKey } = await keys.createKey(m, receiveId(required(p, '--account')), {
        name: label(p),
        expiresInMs: duration(p, '--expires-in') ?? null,
      });
      return {
        json: { keyId: key.id, apiKey },
        text: `created key ${key.id}${key.expires_at ? `, expires ${key.expires_at.toISOString()}` : ''}\n${apiKey}\nThis is the only time the key is shown; store it in a secret manager.`,
      };
    },
  },
  'key list': {
    check: (p) => (allowOnly(p, ['--account'], 0), required(p, '--account'), undefined),
    run: async (p, m) => {
      const list = (await keys.listKeys(m, receiveId(required(p, '--account')))).map(keyView);
      const text = list.length === 0 ? 'no keys' : list.map((k) => `${k.id}  ${k.displayPrefix}  ${k.name ?? ''}  created ${k.createdAt}${k.revokedAt ? `  revoked ${k.revokedAt}` : ''}${k.expiresAt ? `  expires ${k.expiresAt}` : ''}`).join('\n');
      return { json: { keys: list }, text };
    },
  },
  'key revoke': {
    check: (p) => (allowOnly(p, [], 1), positional(p, 'KEY_ID'), undefined),
    run: async (p, m) => {
      const result = await keys.revokeKey(m, receiveId(positional(p, 'KEY_ID')));
      const revokedAt = result.revokedAt.toISOString();
      // Revoking twice changes nothing and succeeds, but says so rather than claim a revocation now.
      if (result.alreadyRevoked) {
        return { json: { keyId: result.keyId, revokedAt, alreadyRevoked: true }, text: `key ${result.keyId} was already revoked at ${revokedAt}; nothing changed` };
      }
      return { json: { keyId: result.keyId, revokedAt }, text: `revoked key ${result.keyId} at ${revokedAt}` };
    },
  },
  'key roll': {
    check: (p) => (allowOnly(p, ['--grace'], 1), positional(p, 'KEY_ID'), duration(p, '--grace'), undefined),
    run: async (p, m) => {
      const result = await keys.rollKey(m, receiveId(positional(p, 'KEY_ID')), duration(p, '--grace') ?? DEFAULT_ROLL_GRACE_MS);
      const previousExpiresAt = result.previousExpiresAt.toISOString();
      return {
        json: { keyId: result.keyId, apiKey: result.apiKey, previousKeyId: result.previousKeyId, previousExpiresAt },
        text: `created key ${result.keyId}\n${result.apiKey}\nkey ${result.previousKeyId} stops working at ${previousExpiresAt}`,
      };
    },
  },
  'key events': {
    check: (p) => (allowOnly(p, ['--account'], 0), required(p, '--account'), undefined),
    run: async (p, m) => {
      const events = await keys.listEvents(m, receiveId(required(p, '--account')));
      const text =
        events.length === 0
          ? 'no events'
          : events
              .map((e) => [e.occurredAt, e.type, e.keyDisplayPrefix ?? '', e.ownerEmail ?? 'operator (CLI)', e.clientAddress ?? '', e.userAgent ?? ''].join('  ').trimEnd())
              .join('\n');
      return { json: { events }, text };
    },
  },
  'owner invite': {
    check: (p) => (allowOnly(p, ['--account', '--email'], 0), required(p, '--account'), required(p, '--email'), undefined),
    run: async (p, _m, owners) => {
      const invited = await inviteOwner(owners, receiveId(required(p, '--account')), required(p, '--email'));
      return {
        json: invited,
        text: `invited owner ${invited.ownerId}; this one-time link sets their password (valid 24 hours):\n${invited.setPasswordUrl}`,
      };
    },
  },
  'owner reset-password': {
    check: (p) => (allowOnly(p, [], 1), positional(p, 'OWNER_ID'), undefined),
    run: async (p, _m, owners) => {
      const reset = await resetOwnerPassword(owners, receiveId(positional(p, 'OWNER_ID')));
      return {
        json: reset,
        text: `signed owner ${reset.ownerId} out everywhere and cleared the password; this one-time link sets a new one (valid 24 hours):\n${reset.setPasswordUrl}`,
      };
    },
  },
};

function fail(message: string, code: number): never {
  process.stderr.write(`${message.split('\n')[0]}\n`);
  process.exit(code);
}

const parsed = (() => {
  try {
    return parseArguments(process.argv.slice(2));
  } catch (error) {
    if (error instanceof UsageError && error.message === USAGE) {
      process.stdout.write(`${USAGE}\n`);
      process.exit(0);
    }
    return fail((error as Error).message, 2);
  }
})();
const command = COMMANDS[parsed.words.slice(0, 2).join(' ')];
if (!command) fail(parsed.words.length === 0 ? 'no command given; see npm run admin -- --help' : `unknown command "${parsed.words.slice(0, 2).join(' ')}"; see npm run admin -- --help`, 2);
try {
  command.check(parsed);
} catch (error) {
  fail((error as Error).message, 2);
}

const config = loadConfigOrExit();
// Only failures reach stderr: a missed cache notice is covered by the gateways' generation polling.
const log = createLogger('admin', 'error', true);
const devDatabase = databaseUrlOf(config, 'accounts') ? undefined : await ensureDevDatabase(log);
const opened = openKeyStore(devDatabase ? { ...config, databaseUrl: devDatabase.url } : config, log, { listen: false });
let exitCode = 0;
try {
  const management = { db: opened.db, config, keyStore: opened.keyStore };
  const result = await command.run(parsed, management, { db: opened.db, keys: management, consoleBaseUrl: config.consoleBaseUrl, now: Date.now });
  process.stdout.write(`${parsed.json ? JSON.stringify(result.json) : result.text}\n`);
} catch (error) {
  exitCode = 1;
  process.stderr.write(`${error instanceof KeyManagementError ? error.message : `failed: ${(error as Error).message}`}\n`);
} finally {
  await opened.close();
  await devDatabase?.stop();
}
process.exit(exitCode);
