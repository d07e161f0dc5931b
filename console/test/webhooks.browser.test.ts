import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runAdminCli } from '../../testing/admin-cli.ts';
import { startStack, type TestStack } from '../../testing/stack.ts';
import { createAccount } from '@ots/accounts';
import { Receiver } from '../../testing/webhook-receiver.ts';
import { ensureConsoleBuilt } from '../ensure-built.ts';
import { launchBrowser, openSession, overflowsSideways, PHONE, shown, snapshot } from './support/browser.ts';

/**
 * Settings → Webhooks in Chromium against a real stack: an owner creates an endpoint that points at
 * a receiver in this test, a strategy created through /graphql (with a key made in the console)
 * reaches it signed with the secret the console showed once, the delivery is listed, and the
 * secret is rotated, the endpoint disabled, enabled and deleted, all by role and accessible name.
 */

const PASSWORD = 'correct horse battery staple';
const CREATE_STRATEGY = 'mutation ($input: CreateStrategyInput!) { createStrategy(input: $input) { strategy { id } error { code message } } }';
const CREATE_ENDPOINT = 'mutation ($input: CreateWebhookEndpointInput!) { createWebhookEndpoint(input: $input) { webhookEndpoint { id } error { code message } } }';

let stack: TestStack;
let browser: Browser;
let origin: string;
let receiver: Receiver;
/** An endpoint that stays, beside the deleted one: what it receives shows the events were sent. */
let witness: Receiver;

beforeAll(async () => {
  ensureConsoleBuilt(() => {});
  [stack, browser, receiver, witness] = await Promise.all([startStack(), launchBrowser(), new Receiver().start(), new Receiver().start()]);
  origin = new URL(stack.gatewayUrl).origin;
}, 120_000);

afterAll(async () => {
  await receiver?.close();
  await witness?.close();
  await browser?.close();
  await stack?.close();
});

async function ownerSignedIn(page: Page, name: string) {
  const account = await createAccount(stack.operator, { name });
  const email = `owner-${account.id.slice(-12)}@example.com`;
  const result = await runAdminCli(stack, ['owner', 'invite', '--account', account.id, '--email', email, '--json'], { CONSOLE_BASE_URL: origin });
  if (result.code !== 0) throw new Error(`owner invite failed: ${result.stderr}`);
  await page.goto(JSON.parse(result.stdout).setPasswordUrl);
  await (await shown(page.getByLabel('New password'))).fill(PASSWORD);
  await page.getByRole('button', { name: 'Set password' }).click();
  await shown(page.getByRole('heading', { level: 1, name }));
  return account;
}

/** The secret shown once in the field named `label`, with its warning. */
async function readSecret(page: Page, label: string): Promise<string> {
  const field = await shown(page.getByRole('textbox', { name: label }));
  await shown(page.getByText('This secret will not be shown again.'));
  expect(await field.getAttribute('readonly')).not.toBeNull();
  const secret = await field.inputValue();
  expect(secret).toMatch(/^whsec_[A-Za-z0-9+/=]+$/);
  return secret;
}

async function closeDialog(page: Page) {
  await page.getByRole('button', { name: 'Done' }).click();
  await page.locator('dialog').waitFor({ state: 'detached' });
}

describe('Settings → Webhooks, in Chromium', () => {
  it('creates an endpoint (secret shown once), lists its delivery, rotates the secret, disables, enables and deletes it', async () => {
    const { page, consoleErrors } = await openSession(browser);
    await ownerSignedIn(page, 'Webhook Traders');

    // A key made in the console, for the change that produces an event.
    await page.getByRole('link', { name: 'API Keys', exact: true }).click();
    await page.getByRole('button', { name: 'Create API key' }).click();
    const keyDialog = await shown(page.getByRole('dialog', { name: 'Create API key' }));
    await keyDialog.getByLabel('Label').fill('strategy-bot');
    await keyDialog.getByRole('button', { name: 'Create', exact: true }).click();
    const apiKey = await (await shown(page.getByRole('textbox', { name: 'New API key' }))).inputValue();
    await closeDialog(page);

    await page.getByRole('link', { name: 'Webhooks', exact: true }).click();
    await shown(page.getByRole('heading', { level: 1, name: 'Webhooks' }));
    expect(page.url()).toBe(`${origin}/settings/webhooks`);
    await shown(page.getByRole('heading', { name: 'No endpoints yet' }));
    await snapshot(page, 'webhooks-empty');

    // Create: a URL that is not one is refused on the form; then the receiver's, for strategy events.
    await page.getByRole('button', { name: 'Create endpoint' }).click();
    const create = await shown(page.getByRole('dialog', { name: 'Create endpoint' }));
    await create.getByLabel('URL').fill('not a url');
    await create.getByRole('button', { name: 'Create endpoint' }).click();
    await shown(create.getByText('Enter a URL that starts with https://.'));
    await create.getByLabel('URL').fill(receiver.url);
    await create.getByRole('checkbox', { name: 'strategy.created' }).check();
    await create.getByRole('checkbox', { name: 'strategy.paused' }).check();
    await create.getByLabel('Description').fill('Risk desk');
    await snapshot(page, 'webhooks-create');
    await create.getByRole('button', { name: 'Create endpoint' }).click();
    const secret = await readSecret(page, 'Signing secret');
    await snapshot(page, 'webhooks-new-secret');
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin });
    await page.getByRole('button', { name: 'Copy', exact: true }).click();
    await shown(page.getByText('Copied to the clipboard.'));
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(secret);
    await closeDialog(page);

    const card = page.getByRole('region', { name: receiver.url, exact: true });
    await shown(card);
    expect(await card.textContent()).toContain('strategy.created, strategy.paused');
    expect(await card.textContent()).toContain('Risk desk');
    expect(await card.textContent()).toContain('Enabled');
    expect(await page.content()).not.toContain(secret);

    // A strategy created through /graphql arrives at the receiver, signed with that secret, and is listed.
    receiver.secrets = [secret];
    const created = await stack.graphql(apiKey, CREATE_STRATEGY, { input: { name: 'Momentum' } });
    expect(created.body.data.createStrategy.error).toBeNull();
    const [delivered] = await receiver.waitFor(1, 20_000);
    expect(delivered!.verified, 'the standardwebhooks verifier accepts the signature').toBeDefined();
    expect(JSON.parse(delivered!.body)).toMatchObject({ type: 'strategy.created', data: { name: 'Momentum' } });
    const deliveries = card.getByRole('region', { name: `Recent deliveries to ${receiver.url}` });
    await expect
      .poll(async () => {
        await page.getByRole('button', { name: 'Refresh' }).click();
        return deliveries.isVisible();
      }, { timeout: 15_000 })
      .toBe(true);
    const row = deliveries.getByRole('row').nth(1);
    expect(await row.getByRole('cell').allTextContents()).toEqual(['strategy.created', '1', '200', expect.stringMatching(/^\d+ ms$|^[\d.]+ s$/)]);
    // With seconds, so that a retry 5 s later does not look simultaneous.
    expect(await row.getByRole('rowheader').textContent()).toMatch(/\d{1,2}:\d{2}:\d{2}/);
    await snapshot(page, 'webhooks');

    // Reloading shows the endpoint, never its secret.
    await page.reload();
    await shown(page.getByRole('region', { name: receiver.url, exact: true }));
    expect(await page.content()).not.toContain(secret);

    // Rotate with no grace: the new secret is shown once, and only it signs what follows.
    await card.getByRole('button', { name: 'Rotate secret' }).click();
    const rotate = await shown(page.getByRole('dialog', { name: 'Rotate signing secret' }));
    await rotate.getByLabel('Grace period').selectOption({ label: 'Now' });
    await snapshot(page, 'webhooks-rotate');
    await rotate.getByRole('button', { name: 'Rotate secret' }).click();
    const rotated = await readSecret(page, 'New signing secret');
    expect(rotated).not.toBe(secret);
    await shown(page.getByText('Webhooks are signed with the new secret only, from now on.'));
    await closeDialog(page);
    await shown(page.getByText(`Signing secret of ${receiver.url} rotated.`));

    receiver.secrets = [rotated];
    const second = await stack.graphql(apiKey, CREATE_STRATEGY, { input: { name: 'Carry' } });
    expect(second.body.data.createStrategy.error).toBeNull();
    const [, next] = await receiver.waitFor(2, 20_000);
    expect(next!.verified, 'signed with the rotated secret').toBeDefined();
    expect(next!.headers['webhook-signature']!.split(' ')).toHaveLength(1);

    // Disable: nothing more is sent; enable again; then delete, after a confirmation.
    await card.getByRole('button', { name: 'Disable' }).click();
    await shown(page.getByText(`Endpoint ${receiver.url} disabled.`));
    await expect.poll(() => card.textContent()).toContain('Disabled');
    await snapshot(page, 'webhooks-disabled');
    await card.getByRole('button', { name: 'Enable' }).click();
    await shown(page.getByText(`Endpoint ${receiver.url} enabled.`));
    await shown(card.getByRole('button', { name: 'Disable' }));

    await card.getByRole('button', { name: 'Delete' }).click();
    const confirm = await shown(page.getByRole('dialog', { name: 'Delete this endpoint?' }));
    // The safe choice has the focus; Cancel keeps the endpoint.
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Cancel');
    await confirm.getByRole('button', { name: 'Cancel' }).click();
    await shown(card);
    await card.getByRole('button', { name: 'Delete' }).click();
    await page.getByRole('dialog', { name: 'Delete this endpoint?' }).getByRole('button', { name: 'Delete endpoint' }).click();
    await shown(page.getByText(`Endpoint ${receiver.url} deleted.`));
    await shown(page.getByRole('heading', { name: 'No endpoints yet' }));

    // The deleted endpoint is sent nothing more: once an endpoint still there has received the event, the deleted one had its turn too.
    const kept = await stack.graphql(apiKey, CREATE_ENDPOINT, { input: { url: witness.url, eventTypes: ['strategy.created'] } });
    expect(kept.body.data.createWebhookEndpoint.error).toBeNull();
    const third = await stack.graphql(apiKey, CREATE_STRATEGY, { input: { name: 'Value' } });
    expect(third.body.data.createStrategy.error).toBeNull();
    const [witnessed] = await witness.waitFor(1, 20_000);
    expect(JSON.parse(witnessed!.body)).toMatchObject({ type: 'strategy.created', data: { name: 'Value' } });
    expect(receiver.received).toHaveLength(2);
    expect(consoleErrors).toEqual([]);
    await page.context().close();
  });

  it('fits a phone and works by keyboard', async () => {
    const { page, consoleErrors } = await openSession(browser, { viewport: PHONE });
    await ownerSignedIn(page, 'Pocket Webhooks');
    await page.getByRole('link', { name: 'Webhooks', exact: true }).click();
    await shown(page.getByRole('heading', { level: 1, name: 'Webhooks' }));
    expect(await overflowsSideways(page)).toBe(false);

    // Tab to "Create endpoint", open it with Enter: the URL field has the focus, the button a visible outline.
    let steps = 0;
    while ((await page.evaluate(() => document.activeElement?.textContent)) !== 'Create endpoint' && steps++ < 20) await page.keyboard.press('Tab');
    expect(await page.evaluate(() => getComputedStyle(document.activeElement!).outlineStyle)).not.toBe('none');
    await page.keyboard.press('Enter');
    const create = await shown(page.getByRole('dialog', { name: 'Create endpoint' }));
    expect(await page.evaluate(() => document.activeElement?.id)).toBe(await create.getByLabel('URL').getAttribute('id'));
    await page.keyboard.type(`${receiver.url}?phone=1`);
    await snapshot(page, 'webhooks-create');
    await page.keyboard.press('Enter');
    await readSecret(page, 'Signing secret');
    expect(await overflowsSideways(page)).toBe(false);
    await page.keyboard.press('Escape');
    await page.locator('dialog').waitFor({ state: 'detached' });
    await shown(page.getByRole('region', { name: `${receiver.url}?phone=1`, exact: true }));
    expect(await overflowsSideways(page)).toBe(false);
    await snapshot(page, 'webhooks');
    expect(consoleErrors).toEqual([]);
    await page.context().close();
  });
});
