import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runAdminCli } from '../../testing/admin-cli.ts';
import { startStack, type TestStack } from '../../testing/stack.ts';
import { createAccount, createKey, setApiAccess } from '@ots/accounts';
import { ensureConsoleBuilt } from '../ensure-built.ts';
import { launchBrowser, openSession, overflowsSideways, PHONE, shown, snapshot } from './browser.ts';

/**
 * The console in a real browser (Debian's Chromium through playwright-core) against a real stack,
 * driven as a person drives it: by role and accessible name.
 */

const USER_AGENT = 'ots-console-browser-test/1.0 (Chromium)';
const PASSWORD = 'correct horse battery staple';
const VIEWER = '{ viewer { account { id name } apiKey { id displayPrefix } } }';

let stack: TestStack;
let browser: Browser;
let origin: string;

beforeAll(async () => {
  ensureConsoleBuilt(() => {});
  [stack, browser] = await Promise.all([startStack(), launchBrowser()]);
  origin = new URL(stack.gatewayUrl).origin;
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await stack?.close();
});

/** `npm run admin -- owner invite ... --json`, as an operator runs it, against the stack's database. */
async function inviteOwner(accountId: string, email: string): Promise<{ ownerId: string; setPasswordUrl: string }> {
  const result = await runAdminCli(stack, ['owner', 'invite', '--account', accountId, '--email', email, '--json'], { CONSOLE_BASE_URL: origin });
  if (result.code !== 0) throw new Error(`owner invite failed: ${result.stderr}`);
  return JSON.parse(result.stdout);
}

async function newAccountWithOwner(name: string) {
  const account = await createAccount(stack.management, name);
  const email = `owner-${account.id.slice(-12)}@example.com`;
  const invitation = await inviteOwner(account.id, email);
  return { account, email, ...invitation };
}

async function viewer(apiKey: string) {
  return stack.graphql(apiKey, VIEWER);
}

async function setPassword(page: Page, setPasswordUrl: string) {
  await page.goto(setPasswordUrl);
  await (await shown(page.getByLabel('New password'))).fill(PASSWORD);
  await page.getByRole('button', { name: 'Set password' }).click();
}

async function signIn(page: Page, email: string, password = PASSWORD) {
  await page.goto(`${origin}/sign-in`);
  await (await shown(page.getByLabel('Email'))).fill(email);
  await page.getByLabel('Password', { exact: true }).fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
}

/** A key's row, by the prefix in its Key cell: after a roll the other row names it too ("Replaces ..."). */
function keyRow(page: Page, prefix: string) {
  return page.getByRole('row').filter({ has: page.locator('code', { hasText: prefix }) });
}

/** The key shown once in "New API key"; the dialog is closed afterwards, as an owner closes it. */
async function readNewKey(page: Page): Promise<string> {
  const field = await shown(page.getByRole('textbox', { name: 'New API key' }));
  await shown(page.getByText('This key will not be shown again.'));
  const apiKey = await field.inputValue();
  expect(apiKey).toMatch(/^svc_live_[A-Za-z0-9]+$/);
  return apiKey;
}

/** Everything the page keeps outside its memory: storage, cookies it can read, the address, history. */
async function keptOutsideMemory(page: Page): Promise<string> {
  const cookies = await page.context().cookies();
  const inPage = await page.evaluate(() => {
    const storage = (store: Storage) => Object.keys(store).map((key) => `${key}=${store.getItem(key)}`);
    return [...storage(localStorage), ...storage(sessionStorage), document.cookie, location.href, JSON.stringify(history.state)];
  });
  return [...inPage, ...cookies.map((cookie) => cookie.value)].join('\n');
}

describe('the console, in Chromium', () => {
  it('an invited owner sets a password, signs in, creates, rolls and revokes a key, reads the security log, uses the explorer and signs out', async () => {
    const { account, email, setPasswordUrl } = await newAccountWithOwner('Northwind Capital');
    expect(setPasswordUrl).toMatch(new RegExp(`^${origin}/set-password#token=[^&]+$`));
    const { page, consoleErrors } = await openSession(browser, { userAgent: USER_AGENT });

    // The page is served with a strict policy, which the console's build keeps without complaint.
    const response = await page.goto(`${origin}/sign-in`);
    const policy = response!.headers()['content-security-policy'] ?? '';
    expect(policy).toMatch(/script-src 'self'/);
    expect(policy).not.toMatch(/unsafe-inline|unsafe-eval/);
    expect(policy).toMatch(/frame-ancestors 'none'/);

    // Set password: too short first, then a good one, which signs the owner in.
    await page.goto(setPasswordUrl);
    await (await shown(page.getByLabel('New password'))).fill('short');
    await page.getByRole('button', { name: 'Set password' }).click();
    await shown(page.getByText('Use at least 12 characters.'));
    await snapshot(page, 'set-password');
    await page.getByLabel('New password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Set password' }).click();
    await shown(page.getByRole('heading', { level: 1, name: 'Northwind Capital' }));
    await shown(page.getByText('Enabled', { exact: true }));
    expect(page.url()).toBe(`${origin}/`);
    await snapshot(page, 'overview');

    // Sign out, then a wrong password gets the one message, and the right one gets in.
    await page.getByRole('link', { name: 'Sign out' }).click();
    await page.waitForURL(`${origin}/sign-in`);
    await signIn(page, email, 'not the password at all');
    await expect.poll(() => page.getByRole('alert').textContent()).toBe('Email or password is incorrect');
    await snapshot(page, 'sign-in');
    await page.getByLabel('Password', { exact: true }).fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await shown(page.getByRole('heading', { level: 1, name: 'Northwind Capital' }));

    // Create a key with a label and an expiry; the sandbox is offered, disabled.
    await page.getByRole('link', { name: 'API Keys', exact: true }).click();
    await shown(page.getByRole('heading', { level: 1, name: 'API Keys' }));
    await page.getByRole('button', { name: 'Create API key' }).click();
    const create = await shown(page.getByRole('dialog', { name: 'Create API key' }));
    expect(await create.getByRole('radio', { name: 'Sandbox — coming soon' }).isDisabled()).toBe(true);
    expect(await create.getByRole('radio', { name: 'Live' }).isChecked()).toBe(true);
    await create.getByLabel('Label').fill('ci-bot');
    await create.getByLabel('Expires').selectOption({ label: 'In 90 days' });
    await snapshot(page, 'create-key');
    await create.getByRole('button', { name: 'Create', exact: true }).click();
    const firstKey = await readNewKey(page);
    await snapshot(page, 'new-key');
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin });
    await page.getByRole('button', { name: 'Copy', exact: true }).click();
    await shown(page.getByText('Copied to the clipboard.'));
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(firstKey);

    const first = await viewer(firstKey);
    expect(first.status).toBe(200);
    expect(first.body.data.viewer.account).toEqual({ id: account.id, name: 'Northwind Capital' });
    const firstPrefix: string = first.body.data.viewer.apiKey.displayPrefix;

    // The key is shown once: gone after the dialog and after a reload, and never stored by the page.
    await page.getByRole('button', { name: 'Done' }).click();
    const firstRow = await shown(keyRow(page, firstPrefix));
    expect(await firstRow.textContent()).toContain('ci-bot');
    expect(await firstRow.textContent()).toContain('Active');
    await page.reload();
    await shown(keyRow(page, firstPrefix));
    expect(await page.getByRole('textbox', { name: 'New API key' }).count()).toBe(0);
    expect(await page.content()).not.toContain(firstKey);
    expect(await keptOutsideMemory(page)).not.toContain(firstKey);

    // Roll with a grace of 1 hour: the new key is shown once the same way, and both keys work.
    await keyRow(page, firstPrefix).getByRole('button', { name: 'Roll', exact: true }).click();
    const roll = await shown(page.getByRole('dialog'));
    await roll.getByLabel('Grace period').selectOption({ label: '1 hour' });
    await snapshot(page, 'roll-key');
    await roll.getByRole('button', { name: 'Roll key' }).click();
    const secondKey = await readNewKey(page);
    expect(secondKey).not.toBe(firstKey);
    const second = await viewer(secondKey);
    expect(second.status).toBe(200);
    expect(second.body.data.viewer.account.id).toBe(account.id);
    expect((await viewer(firstKey)).status).toBe(200);
    const secondPrefix: string = second.body.data.viewer.apiKey.displayPrefix;
    await page.getByRole('button', { name: 'Done' }).click();
    await expect.poll(() => keyRow(page, firstPrefix).textContent()).toContain('Expiring');
    await shown(keyRow(page, secondPrefix));
    await snapshot(page, 'api-keys');

    // Revoke the new key: it is refused within a second, the old one keeps its grace.
    await keyRow(page, secondPrefix).getByRole('button', { name: 'Revoke', exact: true }).click();
    const revoke = await shown(page.getByRole('dialog', { name: 'Revoke this key?' }));
    await snapshot(page, 'revoke-key');
    await revoke.getByRole('button', { name: 'Revoke key' }).click();
    await revoke.waitFor({ state: 'hidden' });
    const revokedAt = Date.now();
    let status = (await viewer(secondKey)).status;
    while (status !== 401 && Date.now() - revokedAt < 1_000) status = (await viewer(secondKey)).status;
    expect(status).toBe(401);
    expect(Date.now() - revokedAt).toBeLessThan(1_000);
    expect((await viewer(firstKey)).status).toBe(200);
    await expect.poll(() => keyRow(page, secondPrefix).textContent()).toContain('Revoked');

    // The security log shows each step, newest first, with owner, address and browser.
    await page.getByRole('link', { name: 'Security log' }).click();
    await shown(page.getByRole('heading', { level: 1, name: 'Security log' }));
    const rows = page.getByRole('table').getByRole('row');
    await shown(rows.nth(1));
    const log = (await rows.allTextContents()).slice(1);
    const position = (text: string, prefix = '') => log.findIndex((row) => row.includes(text) && row.includes(prefix));
    const steps = [
      position('Key revoked', secondPrefix),
      position('Key rolled'),
      position('Key created', firstPrefix),
      position('Sign-in succeeded'),
      position('Sign-in failed'),
      position('Password set'),
    ];
    expect(steps.every((index) => index >= 0), log.join('\n')).toBe(true);
    expect([...steps].sort((a, b) => a - b)).toEqual(steps);
    await snapshot(page, 'security-log');
    const revokedRow = log[steps[0]!]!;
    expect(revokedRow).toContain(email);
    expect(revokedRow).toContain('127.0.0.1');
    expect(revokedRow).toContain(USER_AGENT);

    // The API explorer runs a query with a pasted key, which stays in the page's memory only.
    await page.getByRole('link', { name: 'API explorer' }).click();
    await (await shown(page.getByLabel('API key'))).fill(firstKey);
    const editor = await shown(page.locator('.graphiql-query-editor .CodeMirror'));
    await editor.click();
    await page.keyboard.press('ControlOrMeta+A');
    await page.keyboard.insertText('{ viewer { account { name } } }');
    await page.getByRole('button', { name: /Execute query/ }).click();
    const result = page.getByRole('region', { name: 'Result Window' });
    await expect.poll(() => result.textContent(), { timeout: 10_000 }).toContain('"Northwind Capital"');
    await snapshot(page, 'explorer');
    expect(await keptOutsideMemory(page)).not.toContain(firstKey);

    // Signing out in another tab ends this tab's session too: its next request lands on the sign-in page.
    const otherTab = await page.context().newPage();
    await otherTab.goto(`${origin}/`);
    await otherTab.getByRole('link', { name: 'Sign out' }).click();
    await otherTab.waitForURL(`${origin}/sign-in`);
    await otherTab.close();
    await page.getByRole('link', { name: 'API Keys', exact: true }).click();
    await page.waitForURL(`${origin}/sign-in`);
    await shown(page.getByText('Your session has ended. Sign in again to continue.'));
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password', { exact: true }).fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    // Back where the owner was when the session ended.
    await shown(page.getByRole('heading', { level: 1, name: 'API Keys' }));

    // Sign out ends the session: the console is behind the sign-in page again.
    await page.getByRole('link', { name: 'Sign out' }).click();
    await page.waitForURL(`${origin}/sign-in`);
    await page.goto(`${origin}/settings/api-keys`);
    await page.waitForURL(`${origin}/sign-in`);
    expect(await page.evaluate(async () => (await fetch('/console/api/session')).status)).toBe(401);
    expect(consoleErrors).toEqual([]);
    await page.context().close();
  });

  it('works by keyboard alone, with a visible focus, fits a phone, and says when API access is disabled', async () => {
    const { account, email, setPasswordUrl } = await newAccountWithOwner('Keyboard & Phone Ltd');
    const { page, consoleErrors } = await openSession(browser, { viewport: PHONE, userAgent: USER_AGENT });
    await setPassword(page, setPasswordUrl);
    await shown(page.getByRole('heading', { level: 1, name: 'Keyboard & Phone Ltd' }));
    await page.getByRole('link', { name: 'Sign out' }).click();
    await page.waitForURL(`${origin}/sign-in`);

    // Sign in with the keyboard: Tab to each field, Enter to submit.
    await shown(page.getByLabel('Email'));
    await page.evaluate(() => (document.activeElement as HTMLElement | null)?.blur());
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => document.activeElement?.getAttribute('type'))).toBe('email');
    await page.keyboard.type(email);
    await page.keyboard.press('Tab');
    await page.keyboard.type(PASSWORD);
    await page.keyboard.press('Enter');
    await shown(page.getByRole('heading', { level: 1, name: 'Keyboard & Phone Ltd' }));

    // Every navigation link is on screen at phone width, and no page needs sideways scrolling.
    for (const name of ['Overview', 'API Keys', 'Security log', 'Webhooks', 'API explorer', 'Sign out']) {
      expect(await page.getByRole('link', { name, exact: true }).isVisible(), name).toBe(true);
    }
    for (const [link, heading] of [
      ['API Keys', 'API Keys'],
      ['Security log', 'Security log'],
      ['Webhooks', 'Webhooks'],
      ['API explorer', 'API explorer'],
      ['Overview', 'Keyboard & Phone Ltd'],
    ] as const) {
      await page.getByRole('link', { name: link, exact: true }).click();
      await shown(page.getByRole('heading', { level: 1, name: heading }));
      expect(await overflowsSideways(page), link).toBe(false);
      await snapshot(page, link.toLowerCase().replace(' ', '-'));
    }

    // Reach "API Keys" and "Create API key" with Tab, open with Enter; the focused control shows an outline.
    await page.getByRole('link', { name: 'API Keys', exact: true }).focus();
    await page.keyboard.press('Enter');
    await shown(page.getByRole('heading', { level: 1, name: 'API Keys' }));
    let steps = 0;
    while ((await page.evaluate(() => document.activeElement?.textContent)) !== 'Create API key' && steps++ < 20) await page.keyboard.press('Tab');
    const outline = await page.evaluate(() => getComputedStyle(document.activeElement!).outlineStyle);
    expect(outline).not.toBe('none');
    await snapshot(page, 'keyboard-focus');
    await page.keyboard.press('Enter');
    const create = await shown(page.getByRole('dialog', { name: 'Create API key' }));
    expect(await page.evaluate(() => document.activeElement?.id)).toBe(await create.getByLabel('Label').getAttribute('id'));
    await page.keyboard.type('phone-bot');
    await page.keyboard.press('Enter');
    const apiKey = await readNewKey(page);
    await snapshot(page, 'new-key');
    expect((await viewer(apiKey)).status).toBe(200);
    expect(await overflowsSideways(page)).toBe(false);
    // Escape closes the dialog and the key with it.
    await page.keyboard.press('Escape');
    await page.locator('dialog').waitFor({ state: 'detached' });
    expect(await page.content()).not.toContain(apiKey);
    expect(await overflowsSideways(page)).toBe(false);

    // With API access disabled by an operator, the overview says so, why requests fail, and whom to ask.
    await setApiAccess(stack.management, account.id, false);
    expect((await viewer(apiKey)).status).toBe(403);
    await page.getByRole('link', { name: 'Overview', exact: true }).click();
    await page.reload();
    await shown(page.getByText('Disabled', { exact: true }));
    const access = page.getByRole('region', { name: 'API access' });
    expect(await access.textContent()).toContain('HTTP 403');
    expect(await access.textContent()).toContain('Ask them to enable it');
    expect(await overflowsSideways(page)).toBe(false);
    await snapshot(page, 'overview-disabled');

    // The security log comes 50 events a page, newest first; older ones on request.
    for (let n = 1; n <= 50; n += 1) await createKey(stack.management, account.id, { name: `batch-${n}` });
    await page.getByRole('link', { name: 'Security log', exact: true }).click();
    const rows = page.getByRole('table').getByRole('row');
    await expect.poll(() => rows.count()).toBe(51);
    await page.getByRole('button', { name: 'Show older events' }).click();
    await expect.poll(() => rows.count()).toBeGreaterThan(51);
    const log = (await rows.allTextContents()).slice(1);
    expect(log.at(-1)).toContain('Password set');
    expect(await page.getByRole('button', { name: 'Show older events' }).count()).toBe(0);
    expect(consoleErrors).toEqual([]);
    await page.context().close();
  });

  it("a used set-password link says so as the page opens, before any form; an unknown address shows the console's not-found page", async () => {
    const { setPasswordUrl } = await newAccountWithOwner('Spent Link GmbH');
    const { page, consoleErrors } = await openSession(browser, { userAgent: USER_AGENT });
    await setPassword(page, setPasswordUrl);
    await shown(page.getByRole('heading', { level: 1, name: 'Spent Link GmbH' }));
    await page.getByRole('link', { name: 'Sign out' }).click();
    await page.waitForURL(`${origin}/sign-in`);

    // The same link again: the page says it is used up, and asks for no password.
    await page.goto(setPasswordUrl);
    await shown(page.getByRole('alert').filter({ hasText: 'This link is invalid or has expired' }));
    expect(await page.getByLabel('New password').count()).toBe(0);
    expect(await page.getByRole('button', { name: 'Set password' }).count()).toBe(0);
    await shown(page.getByRole('link', { name: 'Sign in' }));

    // An address the console does not have: its own page, not the server's JSON.
    const response = await page.goto(`${origin}/settings/no-such-page`);
    expect(response!.status()).toBe(404);
    await shown(page.getByRole('heading', { name: 'Page not found' }));
    await shown(page.getByRole('link', { name: 'Go to the overview' }));
    // The browser reports the refused link check and the 404 itself; nothing else went wrong.
    expect(consoleErrors.filter((error) => !/status of (400|404)/.test(error))).toEqual([]);
    await page.context().close();
  });
});
