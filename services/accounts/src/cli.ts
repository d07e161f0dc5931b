import { parseArgs } from 'node:util';
import type { DevDatabase } from '@ots/shared/dev-database';
import { receiveId } from '@ots/shared/ids';
import { API_KEY_SCOPES, DEFAULT_ROLL_GRACE_MS, MAX_ACCOUNT_NAME_LENGTH, MAX_KEY_LABEL_LENGTH, nameProblem, parseDuration } from './domain.ts';
import type { KeyPermissionsInput, OperatorScope } from './operations.ts';
import type { ApiKeyRow } from './repository.ts';

/*
 * Each call is a process of its own, and under tsx every module it loads costs time: the database,
 * Redis and logging clients and the use-cases are imported only once a call has passed its checks,
 * so --help and a mistyped call answer in a fraction of the time, and each command imports the
 * use-cases it calls (the owners' bring password hashing and GraphQL errors).
 */

/** The operator CLI of contract section 5: `npm run admin -- <command> [--json]`. */
const USAGE = `usage: npm run admin -- <command> [--json]
  account create --name NAME
  account list
  account disable-api ACCOUNT_ID
  account enable-api ACCOUNT_ID
  key create --account ACCOUNT_ID [--name LABEL] [--expires-in DURATION] [--scopes LIST] [--allow-cidr LIST]
  key list --account ACCOUNT_ID
  key update KEY_ID [--scopes LIST] [--allow-cidr LIST | --allow-any]
  key revoke KEY_ID
  key roll KEY_ID [--grace DURATION] [--scopes LIST] [--allow-cidr LIST | --allow-any]
  key events --account ACCOUNT_ID
  owner invite --account ACCOUNT_ID --email EMAIL
  owner list --account ACCOUNT_ID
  owner reset-password OWNER_ID
DURATION is a whole number and a unit: 30s, 15m, 12h, 90d.
--scopes is a comma-separated list of ${API_KEY_SCOPES.join(', ')} (default: every scope).
--allow-cidr is a comma-separated list of IPv4 and IPv6 addresses or CIDRs, e.g. 203.0.113.0/24,2001:db8::/48
(default: any address); --allow-any lifts the restriction.`;

class UsageError extends Error {}

interface Parsed {
  words: string[];
  options: Map<string, string>;
  json: boolean;
  allowAny: boolean;
}

const VALUE_OPTIONS = ['--name', '--account', '--expires-in', '--grace', '--email', '--scopes', '--allow-cidr'];

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
      'allow-any': { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
    allowPositionals: true,
    strict: false,
    tokens: true,
  });
  const words: string[] = [];
  const options = new Map<string, string>();
  let json = false;
  let allowAny = false;
  for (const token of tokens) {
    if (token.kind === 'positional') words.push(token.value);
    else if (token.kind === 'option-terminator') throw new UsageError('unknown option --');
    else if (token.name === 'help') throw new UsageError(USAGE);
    else if (token.name === 'json') {
      if (token.value !== undefined) throw new UsageError('--json takes no value');
      json = true;
    } else if (token.name === 'allow-any') {
      if (token.value !== undefined) throw new UsageError('--allow-any takes no value');
      allowAny = true;
    } else {
      const name = token.rawName;
      if (!VALUE_OPTIONS.includes(name)) throw new UsageError(`unknown option ${name}`);
      const value = token.value;
      // `--name --json` is a forgotten value, not an account named "--json".
      if (value === undefined || value === '' || (!token.inlineValue && value.startsWith('--'))) throw new UsageError(`${name} needs a value`);
      options.set(name, value);
    }
  }
  return { words, options, json, allowAny };
}

function allowOnly(parsed: Parsed, allowed: string[], positionals: number): void {
  for (const name of parsed.options.keys()) if (!allowed.includes(name)) throw new UsageError(`${name} does not apply to ${parsed.words.slice(0, 2).join(' ')}`);
  if (parsed.allowAny && !allowed.includes('--allow-any')) throw new UsageError(`--allow-any does not apply to ${parsed.words.slice(0, 2).join(' ')}`);
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

function label(parsed: Parsed): string | null {
  const name = parsed.options.get('--name');
  const problem = name === undefined ? undefined : nameProblem('--name', name, MAX_KEY_LABEL_LENGTH);
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

const list = (text: string) => text.split(',').map((entry) => entry.trim());

/**
 * `--scopes` and `--allow-cidr`/`--allow-any` as the use-case takes them: absent keeps what the key
 * has (or, for `key create`, every scope and any address). The use-case checks the values, so the
 * console and the CLI refuse the same things in the same words.
 */
function permissions(parsed: Parsed): KeyPermissionsInput {
  const scopes = parsed.options.get('--scopes');
  const cidrs = parsed.options.get('--allow-cidr');
  if (cidrs !== undefined && parsed.allowAny) throw new UsageError('give --allow-cidr or --allow-any, not both');
  // An empty list would mean any address: that is said with --allow-any, never by a stray comma.
  if (cidrs !== undefined && list(cidrs).every((entry) => entry === '')) throw new UsageError('--allow-cidr needs at least one address (--allow-any lifts the restriction)');
  return {
    scopes: scopes === undefined ? undefined : list(scopes),
    allowedCidrs: parsed.allowAny ? [] : cidrs === undefined ? undefined : list(cidrs),
  };
}

function keyView(key: ApiKeyRow, replaces: ApiKeyRow | undefined) {
  return {
    // `keyId`, as every other command names a key's id, so that a list's output feeds `key revoke` and `key roll`; `id` as before.
    keyId: key.id,
    id: key.id,
    name: key.name,
    environment: key.environment,
    displayPrefix: key.display_prefix,
    createdAt: key.created_at.toISOString(),
    expiresAt: key.expires_at?.toISOString() ?? null,
    lastUsedAt: key.last_used_at?.toISOString() ?? null,
    revokedAt: key.revoked_at?.toISOString() ?? null,
    scopes: key.scopes,
    allowedCidrs: key.allowed_cidrs,
    replacesKeyId: replaces?.id ?? null,
    replacedByKeyId: key.replaced_by_key_id,
  };
}

/** One line per key: what it is, what it may do, from where, and its place in a roll. */
function keyLine(key: ReturnType<typeof keyView>, prefixes: Map<string, string>): string {
  return [
    key.id,
    key.displayPrefix,
    key.name ?? '',
    `created ${key.createdAt}`,
    key.revokedAt ? `revoked ${key.revokedAt}` : '',
    key.expiresAt ? `expires ${key.expiresAt}` : '',
    `scopes ${key.scopes.length === API_KEY_SCOPES.length ? 'all' : key.scopes.join(',')}`,
    `from ${key.allowedCidrs.length === 0 ? 'anywhere' : key.allowedCidrs.join(',')}`,
    key.replacesKeyId ? `replaces ${prefixes.get(key.replacesKeyId) ?? key.replacesKeyId}` : '',
    key.replacedByKeyId ? `replaced by ${prefixes.get(key.replacedByKeyId) ?? key.replacedByKeyId}` : '',
  ]
    .filter((part) => part !== '')
    .join('  ');
}

/** Who acted: an owner in the console, the operator's CLI, or, for a refused address, the client that used the key. */
function actorOf(event: { type: string; ownerEmail: string | null }): string {
  if (event.ownerEmail) return event.ownerEmail;
  return event.type === 'key.refused_address' ? 'API client' : 'operator (CLI)';
}

function detailOf(detail: Record<string, unknown> | null): string {
  if (!detail) return '';
  const scopes = detail.scopes;
  const cidrs = detail.allowedCidrs;
  const parts = [];
  if (Array.isArray(scopes)) parts.push(`scopes ${scopes.join(',')}`);
  if (Array.isArray(cidrs)) parts.push(`from ${cidrs.length === 0 ? 'anywhere' : cidrs.join(',')}`);
  if (typeof detail.replacedByDisplayPrefix === 'string') parts.push(`replaced by ${detail.replacedByDisplayPrefix}`);
  return parts.join('; ');
}

type Command = (parsed: Parsed, scope: OperatorScope) => Promise<{ json: Record<string, unknown>; text: string }>;

/** Every command checks its arguments before `run` opens a connection, so a bad call changes nothing. */
const COMMANDS: Record<string, { check(parsed: Parsed): void; run: Command }> = {
  'account create': {
    check: (p) => (allowOnly(p, ['--name'], 0), accountName(p), undefined),
    run: async (p, scope) => {
      const { createAccount } = await import('./operations.ts');
      const account = await createAccount(scope, { name: accountName(p) });
      return { json: { accountId: account.id }, text: `created account ${account.id} (${account.name})` };
    },
  },
  'account list': {
    check: (p) => (allowOnly(p, [], 0), undefined),
    run: async (_p, scope) => {
      const { listAccounts } = await import('./operations.ts');
      const accounts = (await listAccounts(scope)).map((account) => ({
        accountId: account.id,
        name: account.name,
        apiAccessEnabled: account.api_access_enabled,
        createdAt: account.created_at.toISOString(),
      }));
      const text =
        accounts.length === 0
          ? 'no accounts'
          : accounts.map((a) => `${a.accountId}  ${a.name}  created ${a.createdAt}${a.apiAccessEnabled ? '' : '  API access disabled'}`).join('\n');
      return { json: { accounts }, text };
    },
  },
  'account disable-api': {
    check: (p) => (allowOnly(p, [], 1), positional(p, 'ACCOUNT_ID'), undefined),
    run: async (p, scope) => {
      const { setApiAccess } = await import('./operations.ts');
      const result = await setApiAccess(scope, { accountId: receiveId(positional(p, 'ACCOUNT_ID')), enabled: false });
      return { json: result, text: `API access disabled for account ${result.accountId}` };
    },
  },
  'account enable-api': {
    check: (p) => (allowOnly(p, [], 1), positional(p, 'ACCOUNT_ID'), undefined),
    run: async (p, scope) => {
      const { setApiAccess } = await import('./operations.ts');
      const result = await setApiAccess(scope, { accountId: receiveId(positional(p, 'ACCOUNT_ID')), enabled: true });
      return { json: result, text: `API access enabled for account ${result.accountId}` };
    },
  },
  'key create': {
    check: (p) => (
      allowOnly(p, ['--account', '--name', '--expires-in', '--scopes', '--allow-cidr'], 0),
      required(p, '--account'),
      label(p),
      duration(p, '--expires-in'),
      permissions(p),
      undefined
    ),
    run: async (p, scope) => {
      const { createKey } = await import('./operations.ts');
      const { key, apiKey } = await createKey(scope, {
        accountId: receiveId(required(p, '--account')),
        name: label(p),
        expiresInMs: duration(p, '--expires-in') ?? null,
        ...permissions(p),
      });
      return {
        json: { keyId: key.id, apiKey, scopes: key.scopes, allowedCidrs: key.allowed_cidrs },
        text: `created key ${key.id}${key.expires_at ? `, expires ${key.expires_at.toISOString()}` : ''} (scopes ${key.scopes.join(',')}; from ${key.allowed_cidrs.length === 0 ? 'anywhere' : key.allowed_cidrs.join(',')})\n${apiKey}\nThis is the only time the key is shown; store it in a secret manager.`,
      };
    },
  },
  'key list': {
    check: (p) => (allowOnly(p, ['--account'], 0), required(p, '--account'), undefined),
    run: async (p, scope) => {
      const { listKeys } = await import('./operations.ts');
      const rows = await listKeys(scope, { accountId: receiveId(required(p, '--account')) });
      const replaced = new Map(rows.filter((k) => k.replaced_by_key_id).map((k) => [k.replaced_by_key_id!, k]));
      const list = rows.map((k) => keyView(k, replaced.get(k.id)));
      const prefixes = new Map(rows.map((k) => [k.id, k.display_prefix]));
      return { json: { keys: list }, text: list.length === 0 ? 'no keys' : list.map((k) => keyLine(k, prefixes)).join('\n') };
    },
  },
  'key update': {
    check: (p) => {
      allowOnly(p, ['--scopes', '--allow-cidr', '--allow-any'], 1);
      positional(p, 'KEY_ID');
      const change = permissions(p);
      if (change.scopes === undefined && change.allowedCidrs === undefined) throw new UsageError('key update needs --scopes, --allow-cidr or --allow-any');
    },
    run: async (p, scope) => {
      const { updateKey } = await import('./operations.ts');
      const { keyId, key } = await updateKey(scope, { keyId: receiveId(positional(p, 'KEY_ID')), ...permissions(p) });
      return {
        json: { keyId, scopes: key.scopes, allowedCidrs: key.allowed_cidrs },
        text: `key ${keyId} (${key.display_prefix}) now has scopes ${key.scopes.join(',')}; from ${key.allowed_cidrs.length === 0 ? 'anywhere' : key.allowed_cidrs.join(',')}`,
      };
    },
  },
  'key revoke': {
    check: (p) => (allowOnly(p, [], 1), positional(p, 'KEY_ID'), undefined),
    run: async (p, scope) => {
      const { revokeKey } = await import('./operations.ts');
      const result = await revokeKey(scope, { keyId: receiveId(positional(p, 'KEY_ID')) });
      const revokedAt = result.revokedAt.toISOString();
      // Revoking twice changes nothing and succeeds, but says so rather than claim a revocation now.
      if (result.alreadyRevoked) {
        return { json: { keyId: result.keyId, revokedAt, alreadyRevoked: true }, text: `key ${result.keyId} was already revoked at ${revokedAt}; nothing changed` };
      }
      return { json: { keyId: result.keyId, revokedAt }, text: `revoked key ${result.keyId} at ${revokedAt}` };
    },
  },
  'key roll': {
    check: (p) => (allowOnly(p, ['--grace', '--scopes', '--allow-cidr', '--allow-any'], 1), positional(p, 'KEY_ID'), duration(p, '--grace'), permissions(p), undefined),
    run: async (p, scope) => {
      const { rollKey } = await import('./operations.ts');
      const result = await rollKey(scope, {
        keyId: receiveId(positional(p, 'KEY_ID')),
        graceMs: duration(p, '--grace') ?? DEFAULT_ROLL_GRACE_MS,
        ...permissions(p),
      });
      const previousExpiresAt = result.previousExpiresAt.toISOString();
      return {
        json: {
          keyId: result.keyId,
          apiKey: result.apiKey,
          previousKeyId: result.previousKeyId,
          previousExpiresAt,
          scopes: result.key.scopes,
          allowedCidrs: result.key.allowed_cidrs,
        },
        text: [
          `created key ${result.keyId} (${result.key.display_prefix}), which replaces key ${result.previousKeyId} (${result.previousKey.display_prefix})`,
          result.apiKey,
          `key ${result.previousKeyId} (${result.previousKey.display_prefix}) keeps working until ${previousExpiresAt}, then stops`,
        ].join('\n'),
      };
    },
  },
  'key events': {
    check: (p) => (allowOnly(p, ['--account'], 0), required(p, '--account'), undefined),
    run: async (p, scope) => {
      const { listEvents } = await import('./operations.ts');
      const events = await listEvents(scope, { accountId: receiveId(required(p, '--account')) });
      const text =
        events.length === 0
          ? 'no events'
          : events
              .map((e) => [e.occurredAt, e.type, e.keyDisplayPrefix ?? '', actorOf(e), e.clientAddress ?? '', e.userAgent ?? '', detailOf(e.detail)].join('  ').trimEnd())
              .join('\n');
      return { json: { events }, text };
    },
  },
  'owner invite': {
    check: (p) => (allowOnly(p, ['--account', '--email'], 0), required(p, '--account'), required(p, '--email'), undefined),
    run: async (p, scope) => {
      const { inviteOwner } = await import('./console/operations.ts');
      const invited = await inviteOwner(scope, { accountId: receiveId(required(p, '--account')), email: required(p, '--email') });
      return {
        json: invited,
        text: `invited owner ${invited.ownerId}; this one-time link sets their password (valid 24 hours):\n${invited.setPasswordUrl}`,
      };
    },
  },
  'owner list': {
    check: (p) => (allowOnly(p, ['--account'], 0), required(p, '--account'), undefined),
    run: async (p, scope) => {
      const { listOwners } = await import('./console/operations.ts');
      const list = await listOwners(scope, { accountId: receiveId(required(p, '--account')) });
      const text = list.length === 0 ? 'no owners' : list.map((o) => `${o.ownerId}  ${o.email}  created ${o.createdAt}  ${o.passwordSet ? 'password set' : 'password not set'}`).join('\n');
      return { json: { owners: list }, text };
    },
  },
  'owner reset-password': {
    check: (p) => (allowOnly(p, [], 1), positional(p, 'OWNER_ID'), undefined),
    run: async (p, scope) => {
      const { resetOwnerPassword } = await import('./console/operations.ts');
      const reset = await resetOwnerPassword(scope, { ownerId: receiveId(positional(p, 'OWNER_ID')) });
      return {
        json: reset,
        text: `signed owner ${reset.ownerId} out everywhere and cleared the password; this one-time link sets a new one (valid 24 hours):\n${reset.setPasswordUrl}`,
      };
    },
  },
};

/** The contract's one line on stderr, whatever a message quotes of the input. */
function firstLine(message: string): string {
  return message.split('\n')[0]!;
}

function fail(message: string, code: number): never {
  process.stderr.write(`${firstLine(message)}\n`);
  process.exit(code);
}

/** What a failed command says: a refusal as it is; a database without the accounts schema with what to run. */
async function problemOf(error: unknown): Promise<string> {
  const { KeyManagementError } = await import('./operations.ts');
  if (error instanceof KeyManagementError) return error.message;
  if ((error as { code?: unknown }).code === UNDEFINED_TABLE) return 'failed: the accounts schema is not in this database yet: run npm run migrate first';
  return `failed: ${(error as Error).message}`;
}

const UNDEFINED_TABLE = '42P01';

/**
 * What a command prints, with every control character but the line break written as a `\uXXXX`
 * escape: stored text (a user agent logged before the log dropped them, a name) must not move the
 * cursor or retitle the operator's terminal. JSON.stringify escapes C0 already; DEL and C1 it leaves
 * raw, and the escape keeps the JSON valid and its values the same.
 */
function forTerminal(output: string): string {
  return output.replace(/(?!\n)\p{Cc}/gu, (control) => `\\u${control.charCodeAt(0).toString(16).padStart(4, '0')}`);
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

const [{ ConfigError, databaseUrlOf, loadConfig }, { createLogger }, { openKeyStore }, { operatorScope }] = await Promise.all([
  import('@ots/shared/config'),
  import('@ots/shared/logger'),
  import('./key-store.ts'),
  import('./operations.ts'),
]);
const config = (() => {
  try {
    return loadConfig();
  } catch (error) {
    // One problem a line, as the servers print them; the CLI's contract is one line in all.
    if (error instanceof ConfigError) fail(error.message.split('\n').join('; '), 1);
    throw error;
  }
})();
// Only failures reach stderr: a missed cache notice is covered by the gateways' generation polling.
const log = createLogger('admin', 'error', true);
let devDatabase: DevDatabase | undefined;
try {
  if (!databaseUrlOf(config, 'accounts')) {
    const [{ ensureDevDatabase }, { migrateSchema }, { migrations, SCHEMA }] = await Promise.all([
      import('@ots/shared/dev-database'),
      import('@ots/shared/db'),
      import('../migrations/index.ts'),
    ]);
    devDatabase = await ensureDevDatabase(log);
    // The embedded database is npm start's, which may not have run yet: its schema is made as npm start makes it.
    await migrateSchema(devDatabase.url, { schema: SCHEMA, migrations });
  }
} catch (error) {
  await devDatabase?.stop();
  fail(`failed: ${(error as Error).message}`, 1);
}
const opened = openKeyStore(devDatabase ? { ...config, databaseUrl: devDatabase.url } : config, log, { listen: false });
let exitCode = 0;
try {
  const result = await command.run(parsed, operatorScope(opened, config, log));
  process.stdout.write(`${forTerminal(parsed.json ? JSON.stringify(result.json) : result.text)}\n`);
} catch (error) {
  exitCode = 1;
  process.stderr.write(`${firstLine(await problemOf(error))}\n`);
} finally {
  await opened.close();
  await devDatabase?.stop();
}
process.exit(exitCode);
