import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startStack, type TestStack } from '../../testing/stack.ts';
import { demoKeyNotice as demoKeyNoticeOf, demoLinkNotice, type DemoKeyOptions } from '../../scripts/demo-key.ts';
import { revokeKey, rollKey } from '@ots/accounts';

const demoKeyNotice = async (options: DemoKeyOptions) => (await demoKeyNoticeOf(options)).text;

/** `npm start`'s demo key: printed on the first run only, kept (embedded database) only where its owner alone can read it. */
let stack: TestStack | undefined;
let folder: string;
let file: string;

async function fresh(): Promise<DemoKeyOptions> {
  await stack?.close();
  stack = await startStack();
  return { operator: stack.operator, endpoint: stack.gatewayUrl, consoleUrl: CONSOLE_URL, keep: true, production: false, terminal: true, file };
}

const CONSOLE_URL = 'http://127.0.0.1:4000/';
const keyIn = (text: string) => /svc_live_\w+/.exec(text)?.[0];
const viewer = async (apiKey: string) => (await stack!.graphql(apiKey, '{ viewer { account { name } } }')).body;

beforeEach(() => {
  folder = mkdtempSync(join(tmpdir(), 'demo-key-'));
  file = join(folder, '.data', 'demo-api-key');
});
afterEach(() => rmSync(folder, { recursive: true, force: true }));
afterAll(async () => stack?.close());

describe('the demo key', () => {
  it('embedded database: printed on the first run only, then kept owner-only and named, never printed again', async () => {
    const options = await fresh();
    const first = await demoKeyNotice(options);
    const apiKey = keyIn(first)!;
    expect(first).toContain(`Demo API key: ${apiKey}\n(shown on this first run only.`);
    expect(first).toContain(`-H 'X-API-Key: ${apiKey}'`);
    expect(await viewer(apiKey)).toEqual({ data: { viewer: { account: { name: 'Demo account' } } } });
    expect(readFileSync(file, 'utf8')).toBe(`${apiKey}\n`);
    expect(statSync(file).mode & 0o777).toBe(0o600);

    // Someone loosened it: the next run makes it owner-only again, and does not print the key.
    chmodSync(file, 0o644);
    const later = await demoKeyNotice(options);
    expect(keyIn(later)).toBeUndefined();
    expect(later).toContain('readable only by you (never printed again: at most once, on the first run, to a terminal)');
    expect(later).toMatch(/-H "X-API-Key: \$\(cat \S*demo-api-key\)"/);
    expect(statSync(file).mode & 0o777).toBe(0o600);
  });

  for (const change of ['revoked', 'rolled'] as const) {
    it(`a kept key that was ${change} since: says it is no longer valid, names the demo account and the console`, async () => {
      const options = await fresh();
      const apiKey = keyIn(await demoKeyNotice(options))!;
      const { body } = await stack!.graphql(apiKey, '{ viewer { account { id } apiKey { id } } }');
      const { account, apiKey: key } = body.data.viewer;
      if (change === 'revoked') await revokeKey(stack!.operator, { keyId: key.id });
      else await rollKey(stack!.operator, { keyId: key.id, graceMs: 0 });
      const later = await demoKeyNotice(options);
      expect(later).toMatch(/The demo API key saved in \S*demo-api-key is no longer valid: it was revoked, rolled or has expired\./);
      expect(later).toContain(`the demo account "Demo account" (${account.id})`);
      expect(later).toContain(`in the console, ${CONSOLE_URL}`);
      expect(later).toContain(`npm run admin -- key create --account ${account.id}`);
      expect(later).not.toContain('$(cat');
    });
  }

  it('a file left with loose permissions is replaced by an owner-only one on the first run', async () => {
    const options = await fresh();
    // A stale kept key from an older database, readable by everyone.
    mkdirSync(join(folder, '.data'));
    writeFileSync(file, 'svc_live_stale\n', { mode: 0o644 });
    const apiKey = keyIn(await demoKeyNotice(options))!;
    expect(readFileSync(file, 'utf8')).toBe(`${apiKey}\n`);
    expect(statSync(file).mode & 0o777).toBe(0o600);
  });

  it('embedded database, output not a terminal (a log file): not printed even on the first run, only kept and named', async () => {
    const options = { ...(await fresh()), terminal: false };
    const first = await demoKeyNotice(options);
    expect(keyIn(first)).toBeUndefined();
    expect(first).toContain('readable only by you (not printed: the output is not a terminal)');
    expect(first).toMatch(/-H "X-API-Key: \$\(cat \S*demo-api-key\)"/);
    const apiKey = readFileSync(file, 'utf8').trim();
    expect(await viewer(apiKey)).toEqual({ data: { viewer: { account: { name: 'Demo account' } } } });
    expect(statSync(file).mode & 0o777).toBe(0o600);
  });

  it("the demo owner's set-password link, like the key: kept and named when the output is not a terminal, printed otherwise", () => {
    const link = 'http://127.0.0.1:4000/set-password#token=qIpEfclS2Whssr11zINz3sRP1z5Q_f8BCaZymsIB7ec';
    const linkFile = join(folder, '.data', 'demo-set-password-link');
    const logged = demoLinkNotice(link, { keep: true, terminal: false, file: linkFile });
    expect(logged).not.toContain('#token=');
    expect(logged).toContain('readable only by you (not printed: the output is not a terminal)');
    expect(readFileSync(linkFile, 'utf8').trim()).toBe(link);
    expect(statSync(linkFile).mode & 0o777).toBe(0o600);
    expect(demoLinkNotice(link, { keep: true, terminal: true, file: linkFile })).toContain(link);
    // Kept nowhere (DATABASE_URL): printed whatever the output, or it would be lost.
    expect(demoLinkNotice(link, { keep: false, terminal: false, file: linkFile })).toContain(link);
    // Once the owner has a password there is no link, and the one kept, used up, goes.
    expect(demoLinkNotice(undefined, { keep: true, terminal: false, file: linkFile })).toBeUndefined();
    expect(existsSync(linkFile)).toBe(false);
  });

  it('another database (DATABASE_URL): printed on the first run, kept nowhere, and later runs say how to make a key', async () => {
    const options = { ...(await fresh()), keep: false };
    const first = await demoKeyNotice(options);
    expect(keyIn(first)).toBeDefined();
    expect(first).toContain('It is not kept anywhere: copy it now.');
    expect(existsSync(file)).toBe(false);
    const later = await demoKeyNotice(options);
    expect(keyIn(later)).toBeUndefined();
    expect(later).toContain('npm run admin -- key create');
  });

  it('production never gets one', async () => {
    const options = { ...(await fresh()), production: true };
    expect(keyIn(await demoKeyNotice(options))).toBeUndefined();
    expect(existsSync(file)).toBe(false);
  });
});
