import type { Page } from 'playwright-core';
import { expect } from 'vitest';
import { createAccount } from '@ots/accounts';
import { runAdminCli } from '../../../testing/admin-cli.ts';
import type { BrowserStack } from './browser-stack.ts';
import { shown } from './browser.ts';

/** What an owner's journey through the console shares: the browser it signs in from, its password, its way in. */

export const USER_AGENT = 'ots-console-browser-test/1.0 (Chromium)';
export const PASSWORD = 'correct horse battery staple';
const VIEWER = '{ viewer { account { id name } apiKey { id displayPrefix } } }';

/** `npm run admin -- owner invite ... --json`, as an operator runs it, against the stack's database. */
async function inviteOwner(t: BrowserStack, accountId: string, email: string): Promise<{ ownerId: string; setPasswordUrl: string }> {
  const result = await runAdminCli(t.stack, ['owner', 'invite', '--account', accountId, '--email', email, '--json'], { CONSOLE_BASE_URL: t.origin });
  if (result.code !== 0) throw new Error(`owner invite failed: ${result.stderr}`);
  return JSON.parse(result.stdout);
}

export async function newAccountWithOwner(t: BrowserStack, name: string) {
  const account = await createAccount(t.stack.operator, { name });
  const email = `owner-${account.id.slice(-12)}@example.com`;
  const invitation = await inviteOwner(t, account.id, email);
  return { account, email, ...invitation };
}

export async function viewer(t: BrowserStack, apiKey: string) {
  return t.stack.graphql(apiKey, VIEWER);
}

export async function setPassword(page: Page, setPasswordUrl: string) {
  await page.goto(setPasswordUrl);
  await (await shown(page.getByLabel('New password'))).fill(PASSWORD);
  await page.getByRole('button', { name: 'Set password' }).click();
}

/** The key shown once in "New API key"; the dialog is closed afterwards, as an owner closes it. */
export async function readNewKey(page: Page): Promise<string> {
  const field = await shown(page.getByRole('textbox', { name: 'New API key' }));
  await shown(page.getByText('This key will not be shown again.'));
  const apiKey = await field.inputValue();
  expect(apiKey).toMatch(/^svc_live_[A-Za-z0-9]+$/);
  return apiKey;
}
