import type { Locator, Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { openSession, shown } from './support/browser.ts';
import { startBrowserStack } from './support/browser-stack.ts';
import { newAccountWithOwner, readNewKey, setPassword, viewer } from './support/owner.ts';

/**
 * A dialog whose request makes a credential (create or roll a key, create an endpoint or rotate its
 * secret) stays open until the answer arrives, whatever the owner presses meanwhile: the server has
 * made the credential by then, and the dialog is the only place it is ever shown.
 */

const t = startBrowserStack();

/**
 * Lets the console's next POST to `path` reach the server, which answers, and holds that answer
 * back from the page until `release()`: a slow network after the server has committed.
 */
async function holdAnswer(page: Page, path: RegExp) {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let answered!: () => void;
  const serverAnswered = new Promise<void>((resolve) => (answered = resolve));
  await page.route(path, async (route) => {
    if (route.request().method() !== 'POST') return route.continue();
    const response = await route.fetch();
    answered();
    await released;
    await route.fulfill({ response });
  });
  return { serverAnswered, release };
}

/** What an owner tries while waiting: Escape, several times (Chromium lets a repeated close request through), and Cancel. */
async function tryToClose(page: Page, dialog: Locator) {
  const cancel = dialog.getByRole('button', { name: 'Cancel' });
  expect(await cancel.isDisabled()).toBe(true);
  for (let press = 0; press < 3; press += 1) await page.keyboard.press('Escape');
  await cancel.click({ force: true });
  expect(await dialog.isVisible()).toBe(true);
}

describe('a dialog with a request in flight, in Chromium', () => {
  it('keeps a new key, a rolled key and a new or rotated signing secret when the owner presses Escape or Cancel meanwhile', async () => {
    const { setPasswordUrl } = await newAccountWithOwner(t, 'Patient Traders');
    const { page, consoleErrors } = await openSession(t.browser);
    await setPassword(page, setPasswordUrl);
    await shown(page.getByRole('heading', { level: 1, name: 'Patient Traders' }));

    // Create API key.
    await page.getByRole('link', { name: 'API Keys', exact: true }).click();
    await page.getByRole('button', { name: 'Create API key' }).click();
    const create = await shown(page.getByRole('dialog', { name: 'Create API key' }));
    await create.getByLabel('Label').fill('slow-network');
    let held = await holdAnswer(page, /\/console\/api\/keys$/);
    await create.getByRole('button', { name: 'Create', exact: true }).click();
    await held.serverAnswered;
    await tryToClose(page, create);
    held.release();
    const created = await readNewKey(page);
    expect((await viewer(t, created)).status).toBe(200);
    await page.getByRole('button', { name: 'Done' }).click();
    await page.locator('dialog').waitFor({ state: 'detached' });

    // Roll it with no grace: the old key stops at once, so the new one must reach the owner.
    await page.getByRole('button', { name: 'Roll', exact: true }).click();
    const roll = await shown(page.getByRole('dialog'));
    await roll.getByLabel('Grace period').selectOption({ label: 'Now' });
    held = await holdAnswer(page, /\/console\/api\/keys\/[^/]+\/roll$/);
    await roll.getByRole('button', { name: 'Roll key' }).click();
    await held.serverAnswered;
    await tryToClose(page, roll);
    held.release();
    const rolled = await readNewKey(page);
    expect((await viewer(t, rolled)).status).toBe(200);
    expect((await viewer(t, created)).status).toBe(401);
    await page.getByRole('button', { name: 'Done' }).click();
    await page.locator('dialog').waitFor({ state: 'detached' });

    // Create endpoint.
    await page.getByRole('link', { name: 'Webhooks', exact: true }).click();
    await page.getByRole('button', { name: 'Create endpoint' }).click();
    const endpoint = await shown(page.getByRole('dialog', { name: 'Create endpoint' }));
    await endpoint.getByLabel('URL').fill('http://127.0.0.1:9/hooks');
    held = await holdAnswer(page, /\/console\/api\/webhooks$/);
    await endpoint.getByRole('button', { name: 'Create endpoint' }).click();
    await held.serverAnswered;
    await tryToClose(page, endpoint);
    held.release();
    expect(await (await shown(page.getByRole('textbox', { name: 'Signing secret' }))).inputValue()).toMatch(/^whsec_/);
    await page.getByRole('button', { name: 'Done' }).click();
    await page.locator('dialog').waitFor({ state: 'detached' });

    // Rotate its secret with no grace.
    await page.getByRole('button', { name: 'Rotate secret' }).click();
    const rotate = await shown(page.getByRole('dialog', { name: 'Rotate signing secret' }));
    await rotate.getByLabel('Grace period').selectOption({ label: 'Now' });
    held = await holdAnswer(page, /\/console\/api\/webhooks\/[^/]+\/rotate-secret$/);
    await rotate.getByRole('button', { name: 'Rotate secret' }).click();
    await held.serverAnswered;
    await tryToClose(page, rotate);
    held.release();
    expect(await (await shown(page.getByRole('textbox', { name: 'New signing secret' }))).inputValue()).toMatch(/^whsec_/);

    expect(consoleErrors).toEqual([]);
    await page.context().close();
  }, 60_000);

  it('stays signed in, and says so, when the server does not take the sign-out; signs out once it does', async () => {
    const { setPasswordUrl } = await newAccountWithOwner(t, 'Careful Leavers');
    const { page } = await openSession(t.browser);
    await setPassword(page, setPasswordUrl);
    await shown(page.getByRole('heading', { level: 1, name: 'Careful Leavers' }));

    await page.route(/\/console\/api\/sign-out$/, (route) => route.fulfill({ status: 503, contentType: 'application/json', body: JSON.stringify({ detail: 'Temporarily unavailable' }) }));
    await page.getByRole('link', { name: 'Sign out' }).click();
    expect(await (await shown(page.getByRole('alert'))).textContent()).toContain('Signing out failed, and you are still signed in');
    // The session is still live on the server: a reload shows the console, not the sign-in page.
    await page.reload();
    await shown(page.getByRole('heading', { level: 1, name: 'Careful Leavers' }));

    await page.unroute(/\/console\/api\/sign-out$/);
    await page.getByRole('link', { name: 'Sign out' }).click();
    await shown(page.getByRole('button', { name: 'Sign in' }));
    await page.reload();
    await shown(page.getByRole('button', { name: 'Sign in' }));
    await page.context().close();
  }, 60_000);
});
