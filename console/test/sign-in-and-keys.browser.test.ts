import type { Page } from 'playwright-core';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { openProfile, saveScreenshotsOnFailure, shown, snapshot, type Session } from './support/browser.ts';
import { startBrowserStack } from './support/browser-stack.ts';
import { newAccountWithOwner, PASSWORD, readNewKey, USER_AGENT, viewer } from './support/owner.ts';

/**
 * The console in a real browser (Debian's Chromium through playwright-core) against a real stack,
 * driven as a person drives it, by role and accessible name. An invited owner's first visit: sets a password, signs in, creates, rolls and revokes a key, reads
 * the security log, uses the explorer and signs out, all under a strict Content-Security-Policy.
 */

const t = startBrowserStack();

async function signIn(page: Page, email: string, password = PASSWORD) {
  await page.goto(`${t.origin}/sign-in`);
  await (await shown(page.getByLabel('Email'))).fill(email);
  await page.getByLabel('Password', { exact: true }).fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
}

/** A key's row, by the prefix in its Key cell: after a roll the other row names it too ("Replaces ..."). */
function keyRow(page: Page, prefix: string) {
  return page.getByRole('row').filter({ has: page.locator('code', { hasText: prefix }) });
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

/**
 * One owner's journey, a step per test, in order: each step starts where the one before left the
 * page, so a failing step fails those after it too.
 */
describe('an invited owner, in Chromium', () => {
  let session: Session;
  let page: Page;
  let account: { id: string };
  let email: string;
  let setPasswordUrl: string;
  let firstKey: string;
  let firstPrefix: string;
  let secondKey: string;
  let secondPrefix: string;

  beforeAll(async () => {
    ({ account, email, setPasswordUrl } = await newAccountWithOwner(t, 'Northwind Capital'));
    session = await openProfile(t.browser, { userAgent: USER_AGENT });
    page = session.page;
  });

  beforeEach(() => saveScreenshotsOnFailure(session.context));

  afterAll(async () => {
    await page?.context().close();
  });

  it("the page is served with a strict policy, which the console's build keeps without complaint", async () => {
    expect(setPasswordUrl).toMatch(new RegExp(`^${t.origin}/set-password#token=[^&]+$`));
    const response = await page.goto(`${t.origin}/sign-in`);
    const policy = response!.headers()['content-security-policy'] ?? '';
    expect(policy).toMatch(/script-src 'self'/);
    expect(policy).not.toMatch(/unsafe-inline|unsafe-eval/);
    expect(policy).toMatch(/frame-ancestors 'none'/);
  });

  it('set password: too short first, then a good one, which signs the owner in', async () => {
    await page.goto(setPasswordUrl);
    await (await shown(page.getByLabel('New password'))).fill('short');
    await page.getByRole('button', { name: 'Set password' }).click();
    await shown(page.getByText('Use at least 12 characters.'));
    await snapshot(page, 'set-password');
    await page.getByLabel('New password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Set password' }).click();
    await shown(page.getByRole('heading', { level: 1, name: 'Northwind Capital' }));
    await shown(page.getByText('Enabled', { exact: true }));
    expect(page.url()).toBe(`${t.origin}/`);
    await snapshot(page, 'overview');
  });

  it('sign out, then a wrong password gets the one message, and the right one gets in', async () => {
    await page.getByRole('link', { name: 'Sign out' }).click();
    await page.waitForURL(`${t.origin}/sign-in`);
    await signIn(page, email, 'not the password at all');
    await expect.poll(() => page.getByRole('alert').textContent()).toBe('Email or password is incorrect');
    await snapshot(page, 'sign-in');
    await page.getByLabel('Password', { exact: true }).fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await shown(page.getByRole('heading', { level: 1, name: 'Northwind Capital' }));
  });

  it('create a key with a label and an expiry; the sandbox is offered, disabled', async () => {
    await page.getByRole('link', { name: 'API Keys', exact: true }).click();
    await shown(page.getByRole('heading', { level: 1, name: 'API Keys' }));
    await page.getByRole('button', { name: 'Create API key' }).click();
    const create = await shown(page.getByRole('dialog', { name: 'Create API key' }));
    expect(await create.getByRole('radio', { name: 'Sandbox — coming soon' }).isDisabled()).toBe(true);
    expect(await create.getByRole('radio', { name: 'Live' }).isChecked()).toBe(true);
    await create.getByLabel('Label').fill('ci-bot');
    await create.getByLabel('Expires').selectOption({ label: '90 days' });
    await snapshot(page, 'create-key');
    await create.getByRole('button', { name: 'Create', exact: true }).click();
    firstKey = await readNewKey(page);
    await snapshot(page, 'new-key');
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: t.origin });
    await page.getByRole('button', { name: 'Copy', exact: true }).click();
    await shown(page.getByText('Copied to the clipboard.'));
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(firstKey);

    const first = await viewer(t, firstKey);
    expect(first.status).toBe(200);
    expect(first.body.data.viewer.account).toEqual({ id: account.id, name: 'Northwind Capital' });
    firstPrefix = first.body.data.viewer.apiKey.displayPrefix;
  });

  it('the key is shown once: gone after the dialog and after a reload, and never stored by the page', async () => {
    await page.getByRole('button', { name: 'Done' }).click();
    const firstRow = await shown(keyRow(page, firstPrefix));
    expect(await firstRow.textContent()).toContain('ci-bot');
    expect(await firstRow.textContent()).toContain('Active');
    await page.reload();
    await shown(keyRow(page, firstPrefix));
    expect(await page.getByRole('textbox', { name: 'New API key' }).count()).toBe(0);
    expect(await page.content()).not.toContain(firstKey);
    expect(await keptOutsideMemory(page)).not.toContain(firstKey);
  });

  it('roll with a grace of 1 hour: the new key is shown once the same way, and both keys work', async () => {
    await keyRow(page, firstPrefix).getByRole('button', { name: 'Roll', exact: true }).click();
    const roll = await shown(page.getByRole('dialog'));
    await roll.getByLabel('Grace period').selectOption({ label: '1 hour' });
    await snapshot(page, 'roll-key');
    await roll.getByRole('button', { name: 'Roll key' }).click();
    secondKey = await readNewKey(page);
    expect(secondKey).not.toBe(firstKey);
    const second = await viewer(t, secondKey);
    expect(second.status).toBe(200);
    expect(second.body.data.viewer.account.id).toBe(account.id);
    expect((await viewer(t, firstKey)).status).toBe(200);
    secondPrefix = second.body.data.viewer.apiKey.displayPrefix;
    await page.getByRole('button', { name: 'Done' }).click();
    await expect.poll(() => keyRow(page, firstPrefix).textContent()).toContain('Expiring');
    await shown(keyRow(page, secondPrefix));
    await snapshot(page, 'api-keys');
  });

  it('revoke the new key: it is refused within a second, the old one keeps its grace', async () => {
    await keyRow(page, secondPrefix).getByRole('button', { name: 'Revoke', exact: true }).click();
    const revoke = await shown(page.getByRole('dialog', { name: 'Revoke this key?' }));
    await snapshot(page, 'revoke-key');
    await revoke.getByRole('button', { name: 'Revoke key' }).click();
    await revoke.waitFor({ state: 'hidden' });
    const revokedAt = Date.now();
    let status = (await viewer(t, secondKey)).status;
    while (status !== 401 && Date.now() - revokedAt < 1_000) status = (await viewer(t, secondKey)).status;
    expect(status).toBe(401);
    expect(Date.now() - revokedAt).toBeLessThan(1_000);
    expect((await viewer(t, firstKey)).status).toBe(200);
    await expect.poll(() => keyRow(page, secondPrefix).textContent()).toContain('Revoked');
  });

  it('the security log shows each step, newest first, with owner, address and browser', async () => {
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
  });

  it("the API explorer runs a query with a pasted key, which stays in the page's memory only", async () => {
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

    // GraphiQL's dialogs lock the page's scroll with a <style> element, which the policy admits by the page's nonce.
    expect(await page.evaluate(() => getComputedStyle(document.body).overflow)).not.toBe('hidden');
    await page.getByRole('button', { name: 'Open settings dialog' }).click();
    await shown(page.getByRole('dialog'));
    expect(await page.evaluate(() => getComputedStyle(document.body).overflow)).toBe('hidden');
    await snapshot(page, 'explorer-settings');
    await page.keyboard.press('Escape');
    await expect.poll(() => page.getByRole('dialog').count()).toBe(0);
    expect(session.consoleErrors).toEqual([]);
  });

  it("signing out in another tab ends this tab's session too: its next request lands on the sign-in page", async () => {
    const otherTab = await page.context().newPage();
    await otherTab.goto(`${t.origin}/`);
    await otherTab.getByRole('link', { name: 'Sign out' }).click();
    await otherTab.waitForURL(`${t.origin}/sign-in`);
    await otherTab.close();
    await page.getByRole('link', { name: 'API Keys', exact: true }).click();
    await page.waitForURL(`${t.origin}/sign-in`);
    await shown(page.getByText('Your session has ended. Sign in again to continue.'));
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password', { exact: true }).fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    // Back where the owner was when the session ended.
    await shown(page.getByRole('heading', { level: 1, name: 'API Keys' }));
  });

  it('sign out ends the session: the console is behind the sign-in page again', async () => {
    await page.getByRole('link', { name: 'Sign out' }).click();
    await page.waitForURL(`${t.origin}/sign-in`);
    await page.goto(`${t.origin}/settings/api-keys`);
    await page.waitForURL(`${t.origin}/sign-in`);
    expect(await page.evaluate(async () => (await fetch('/console/api/session')).status)).toBe(401);
    expect(session.consoleErrors).toEqual([]);
  });
});
