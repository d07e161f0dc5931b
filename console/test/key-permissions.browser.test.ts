import type { Browser, Locator } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAccount, inviteOwner } from '@ots/accounts';
import { startStack, type TestStack } from '../../testing/stack.ts';
import { ensureConsoleBuilt } from '../ensure-built.ts';
import { LAPTOP, launchBrowser, openSession, overflowsSideways, PHONE, shown, snapshot } from './support/browser.ts';

/**
 * The console's key permissions (contract section 5) in Chromium, by role and accessible name:
 * "Permissions" and "Allowed IP addresses" on create, "Edit" with "Save", the table's "Permissions"
 * and "Allowed from", and after a roll which key each row replaces or is replaced by.
 */
const PASSWORD = 'correct horse battery staple';
const VIEWER = '{ viewer { apiKey { displayPrefix scopes allowedCidrs } } }';

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

describe('key permissions in the console', () => {
  it('create a narrowed key, widen it with Edit → Save, roll it and tell the two rows apart', async () => {
    const account = await createAccount(stack.operator, { name: 'Permissions Ltd' });
    const { setPasswordUrl } = await inviteOwner(
      { ...stack.operator, config: { ...stack.operator.config, consoleBaseUrl: origin } },
      { accountId: account.id, email: `owner-${account.id.slice(-12)}@example.com` },
    );
    const { page, consoleErrors } = await openSession(browser);
    await page.goto(setPasswordUrl);
    await (await shown(page.getByLabel('New password'))).fill(PASSWORD);
    await page.getByRole('button', { name: 'Set password' }).click();
    await shown(page.getByRole('heading', { level: 1, name: 'Permissions Ltd' }));

    // Create: every permission is checked by default; this key only reads, from two addresses.
    await page.getByRole('link', { name: 'API Keys', exact: true }).click();
    await page.getByRole('button', { name: 'Create API key' }).click();
    const create = await shown(page.getByRole('dialog', { name: 'Create API key' }));
    const permissions = create.getByRole('group', { name: 'Permissions' });
    for (const name of ['Read', 'Orders', 'Fills', 'Strategies', 'Webhooks']) expect(await permissions.getByRole('checkbox', { name }).isChecked()).toBe(true);
    await create.getByLabel('Label').fill('reporting');
    for (const name of ['Orders', 'Fills', 'Strategies', 'Webhooks']) await permissions.getByRole('checkbox', { name }).uncheck();
    await create.getByRole('textbox', { name: 'Allowed IP addresses' }).fill('127.0.0.1\n2001:db8::/32\n');
    await snapshot(page, 'create-key-permissions');
    await create.getByRole('button', { name: 'Create', exact: true }).click();
    const apiKey = await (await shown(page.getByRole('textbox', { name: 'New API key' }))).inputValue();
    await page.getByRole('button', { name: 'Done' }).click();

    const created = await stack.graphql(apiKey, VIEWER);
    expect(created.body.data.viewer.apiKey).toMatchObject({ scopes: ['READ'], allowedCidrs: ['127.0.0.1/32', '2001:db8::/32'] });
    const prefix: string = created.body.data.viewer.apiKey.displayPrefix;
    // A row is found by the prefix in its Key cell; after a roll the other row names it too ("Replaces …").
    const rowOf = (keyPrefix: string) => page.getByRole('row').filter({ has: page.locator('code', { hasText: keyPrefix }) });
    const row = () => rowOf(prefix);
    await expect.poll(async () => (await row().getByRole('cell').allTextContents()).join('|')).toContain('Read|127.0.0.1/32, 2001:db8::/32');
    expect(await page.getByRole('columnheader', { name: 'Permissions' }).count()).toBe(1);
    expect(await page.getByRole('columnheader', { name: 'Allowed from' }).count()).toBe(1);

    // Edit → Save: the key may now place orders, from anywhere; the API sees it at once.
    await row().getByRole('button', { name: 'Edit', exact: true }).click();
    const edit = await shown(page.getByRole('dialog', { name: 'Edit key “reporting”' }));
    expect(await edit.getByRole('checkbox', { name: 'Read' }).isChecked()).toBe(true);
    expect(await edit.getByRole('checkbox', { name: 'Orders' }).isChecked()).toBe(false);
    await edit.getByRole('checkbox', { name: 'Orders' }).check();
    await edit.getByRole('textbox', { name: 'Allowed IP addresses' }).fill('not an address');
    await edit.getByRole('button', { name: 'Save' }).click();
    await shown(edit.getByText('"not an address" is not an IPv4 or IPv6 address or CIDR', { exact: false }));
    await snapshot(page, 'edit-key-refused');
    await edit.getByRole('textbox', { name: 'Allowed IP addresses' }).fill('');
    await edit.getByRole('button', { name: 'Save' }).click();
    await expect.poll(async () => (await row().getByRole('cell').allTextContents()).join('|')).toContain('Read, Orders|Anywhere');
    expect((await stack.graphql(apiKey, VIEWER)).body.data.viewer.apiKey).toMatchObject({ scopes: ['READ', 'ORDERS_WRITE'], allowedCidrs: [] });

    // Roll: two rows labelled "reporting", each saying which key it replaces or is replaced by.
    await row().getByRole('button', { name: 'Roll', exact: true }).click();
    const roll = await shown(page.getByRole('dialog'));
    await roll.getByLabel('Grace period').selectOption({ label: '1 hour' });
    await roll.getByRole('button', { name: 'Roll key' }).click();
    const successor = await (await shown(page.getByRole('textbox', { name: 'New API key' }))).inputValue();
    await page.getByRole('button', { name: 'Done' }).click();
    const successorPrefix: string = (await stack.graphql(successor, VIEWER)).body.data.viewer.apiKey.displayPrefix;
    await expect.poll(() => row().textContent()).toContain(`Replaced by ${successorPrefix}`);
    await expect.poll(() => rowOf(successorPrefix).textContent()).toContain(`Replaces ${prefix}`);
    expect(await rowOf(successorPrefix).textContent()).toContain('Read, Orders');

    // Narrow the successor to two networks this machine is not in: the API refuses it from here.
    await rowOf(successorPrefix).getByRole('button', { name: 'Edit', exact: true }).click();
    const narrow = await shown(page.getByRole('dialog'));
    await narrow.getByRole('textbox', { name: 'Allowed IP addresses' }).fill('10.0.0.0/8\n2001:db8:abcd:12::/64');
    await narrow.getByRole('button', { name: 'Save' }).click();
    await expect.poll(async () => (await rowOf(successorPrefix).getByRole('cell').allTextContents()).join('|')).toContain('Read, Orders|10.0.0.0/8, 2001:db8:abcd:12::/64');
    expect((await stack.graphql(successor, VIEWER)).status).toBe(401);

    // At laptop width the whole table fits its card: every column, each row's label and its buttons.
    const table = page.getByRole('region', { name: 'API keys' });
    expect(await table.evaluate((frame) => frame.scrollWidth - frame.clientWidth)).toBeLessThanOrEqual(0);
    const frame = (await table.boundingBox())!;
    const inFrame = async (locator: Locator) => {
      const box = (await locator.boundingBox())!;
      return box.x >= frame.x && box.x + box.width <= frame.x + frame.width;
    };
    for (const keyPrefix of [prefix, successorPrefix]) {
      const keyRow = rowOf(keyPrefix);
      expect(await keyRow.getByRole('rowheader').textContent()).toBe('reporting');
      expect(await inFrame(keyRow.getByRole('rowheader'))).toBe(true);
      expect(await keyRow.getByRole('cell').first().textContent()).toContain('Live');
      for (const button of await keyRow.getByRole('button').all()) expect(await inFrame(button), await button.textContent() ?? '').toBe(true);
    }
    expect(await rowOf(successorPrefix).getByRole('button').allTextContents()).toEqual(['Edit', 'Roll', 'Revoke']);
    for (const name of ['Label', 'Key', 'Permissions', 'Allowed from', 'Created', 'Last used', 'Expires', 'Status']) {
      expect(await inFrame(page.getByRole('columnheader', { name, exact: true })), name).toBe(true);
    }
    await snapshot(page, 'api-keys-permissions');
    // At phone width each key is a card: still nothing to scroll sideways, the environment beside the key.
    await page.setViewportSize(PHONE);
    expect(await overflowsSideways(page)).toBe(false);
    expect(await rowOf(successorPrefix).getByRole('cell').first().textContent()).toContain('Live');
    await snapshot(page, 'api-keys-permissions');
    await page.setViewportSize(LAPTOP);

    // The security log says what each change did, and where a refused request came from.
    await page.getByRole('link', { name: 'Security log' }).click();
    await shown(page.getByText('Key permissions changed').first());
    const logRow = (text: string) => page.getByRole('row').filter({ hasText: text });
    // The refusal is written after the 401 is answered; the page shows the log as it was when opened.
    await expect.poll(async () => (await page.reload(), await shown(page.getByRole('heading', { level: 1, name: 'Security log' })), logRow('Key refused').count())).toBe(1);
    expect(await logRow(`Key refused: address not allowed${successorPrefix}`).textContent()).toMatch(/Request from (::ffff:)?127\.0\.0\.1, which the key does not allow/);
    expect(await logRow(`Key permissions changed${successorPrefix}`).getByRole('rowheader').textContent()).toContain('Allowed from: Anywhere → 10.0.0.0/8, 2001:db8:abcd:12::/64');
    expect(await logRow(`Key permissions changed${successorPrefix}`).getByRole('rowheader').textContent()).not.toContain('Permissions:');
    expect(await logRow(`Key permissions changed${prefix}`).getByRole('rowheader').textContent()).toContain(
      'Permissions: Read → Read, Orders; Allowed from: 127.0.0.1/32, 2001:db8::/32 → Anywhere',
    );
    expect(await logRow(`Key rolled${prefix}`).getByRole('rowheader').textContent()).toContain(`Replaced by ${successorPrefix}`);
    expect(await logRow(`Key created${prefix}`).getByRole('rowheader').textContent()).toContain('Permissions: Read; Allowed from: 127.0.0.1/32, 2001:db8::/32');
    expect(await page.getByRole('region', { name: 'Security log' }).evaluate((frame) => frame.scrollWidth - frame.clientWidth)).toBeLessThanOrEqual(0);
    await snapshot(page, 'security-log-permissions');
    // The refused Save above is the browser's one logged 400; nothing else went wrong.
    expect(consoleErrors.filter((error) => !/status of 400/.test(error))).toEqual([]);
  }, 120_000);
});
