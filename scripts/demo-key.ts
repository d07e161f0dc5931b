import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { decideKey, findAccount, hashApiKey, createAccount, createKey, type OperatorScope, hasAnyAccount } from '@ots/accounts';

/** Where `npm start` keeps the demo key of the embedded database: in the ignored `.data/`, owner-only. */
const DEMO_KEY_FILE = fileURLToPath(new URL('../.data/demo-api-key', import.meta.url));
/** And the demo owner's set-password link, when its output is not a terminal. */
const DEMO_LINK_FILE = fileURLToPath(new URL('../.data/demo-set-password-link', import.meta.url));

export interface DemoKeyOptions {
  operator: OperatorScope;
  /** The gateway's GraphQL URL, for the ready-to-paste curl line. */
  endpoint: string;
  /** The console's address, where the demo owner makes a new key once the kept one is no longer valid. */
  consoleUrl: string;
  /** True for the embedded database, whose demo key is kept in `file`; another database's is shown once and not kept. */
  keep: boolean;
  /** Production never gets a demo key. */
  production: boolean;
  /** Whether stdout is a terminal. When it is not (a log file, a collector), a key kept in `file` is not printed. */
  terminal: boolean;
  file?: string;
}

const curl = (endpoint: string, keyHeader: string) =>
  `  curl -s ${endpoint} -H 'Content-Type: application/json' -H ${keyHeader} \\\n    -d '{"query":"{ viewer { account { id name } apiKey { displayPrefix } } }"}'`;

/** Replaces the file with a new one that only its owner can read, whatever the old one's mode was. */
function keep(file: string, secret: string): void {
  // The folder keeps its default mode: the embedded Postgres's data, in it too, belongs to the `postgres`
  // user when this runs as root, which must be able to enter it. The key file alone is the owner's.
  mkdirSync(dirname(file), { recursive: true });
  const fresh = `${file}.${process.pid}`;
  writeFileSync(fresh, `${secret}\n`, { mode: 0o600, flag: 'wx' });
  renameSync(fresh, file);
}

/**
 * What `npm start` says about the demo key. A first run on an empty development database creates a
 * demo account and key and prints the key, this once, to the terminal (never to a log line). Later
 * runs never print it: for the embedded database they name the owner-only file that keeps it, with a
 * curl line that reads it from there; so does a first run whose output is not a terminal. Production
 * never gets a demo key.
 */
export interface DemoKeyNotice {
  text: string;
  /** The demo account this run created, if it did: `npm start` invites the demo owner to it. */
  createdAccountId?: string;
}

export async function demoKeyNotice(options: DemoKeyOptions): Promise<DemoKeyNotice> {
  const { operator, endpoint } = options;
  const file = options.file ?? DEMO_KEY_FILE;
  const shownFile = relative(process.cwd(), file);
  const createYourOwn = 'Create a key with: npm run admin -- account create --name NAME, then npm run admin -- key create --account ACCOUNT_ID\n';
  if (options.production) return { text: createYourOwn };

  const fromFile = (why: string) =>
    `Demo API key: kept in ${shownFile}, readable only by you (${why})\n\nTry it:\n${curl(endpoint, `"X-API-Key: $(cat ${shownFile})"`)}\n`;

  if (!(await hasAnyAccount(operator.db))) {
    const account = await createAccount(operator, { name: 'Demo account' });
    const { apiKey } = await createKey(operator, { accountId: account.id, name: 'demo' });
    if (options.keep) keep(file, apiKey);
    if (options.keep && !options.terminal) return { text: fromFile('not printed: the output is not a terminal'), createdAccountId: account.id };
    // Without a file to keep it in, the key is printed even to a non-terminal: it would be lost otherwise.
    const where = options.keep ? `It is kept in ${shownFile}, readable only by you` : 'It is not kept anywhere: copy it now';
    const text = `Demo API key: ${apiKey}\n(shown on this first run only. ${where}.)\n\nTry it:\n${curl(endpoint, `'X-API-Key: ${apiKey}'`)}\n`;
    return { text, createdAccountId: account.id };
  }

  if (options.keep && existsSync(file)) {
    // Owner-only even if someone loosened it since.
    chmodSync(file, 0o600);
    const kept = readFileSync(file, 'utf8').trim();
    const record = await operator.keyStore.lookup(hashApiKey(operator.config.apiKeyHmacSecret, kept));
    const decision = decideKey(record, Date.now());
    if (decision.kind === 'authenticated') return { text: fromFile('never printed again: at most once, on the first run, to a terminal') };
    // Rolled, revoked or expired since (or its account's API access disabled): say so, and where a new one comes from.
    const account = record && (await findAccount(operator.db, record.accountId));
    const why = decision.kind === 'access-disabled' ? 'API access is disabled for its account' : 'it was revoked, rolled or has expired';
    const named = account ? `the demo account "${account.name}" (${account.id})` : 'the demo account';
    const text =
      `The demo API key saved in ${shownFile} is no longer valid: ${why}.\n` +
      `Make a new key for ${named} in the console, ${options.consoleUrl} (API Keys), ` +
      `or with: npm run admin -- key create --account ${account ? account.id : 'ACCOUNT_ID'}\n`;
    return { text };
  }
  return { text: createYourOwn };
}

/**
 * What `npm start` says about the demo owner's one-time set-password link, which signs in whoever opens
 * it first: like the key, it goes to the terminal, never to a log line. When the output is not a
 * terminal and the embedded database keeps it, it is kept in an owner-only file and that file named.
 * No link (the demo owner has a password): nothing to say, and a link kept before, used up, goes.
 */
export function demoLinkNotice(link: string | undefined, options: Pick<DemoKeyOptions, 'keep' | 'terminal'> & { file?: string }): string | undefined {
  const file = options.file ?? DEMO_LINK_FILE;
  if (link === undefined) {
    rmSync(file, { force: true });
    return undefined;
  }
  const intro = 'Demo owner demo@example.com: set a password (one-time link, valid 24 hours) and you are signed in';
  if (!options.keep || options.terminal) return `${intro}:\n  ${link}\n`;
  keep(file, link);
  return `${intro} through the link kept in ${relative(process.cwd(), file)}, readable only by you (not printed: the output is not a terminal)\n`;
}
