import { describe, expect, it } from 'vitest';
import { createKey, setApiAccess } from '@ots/accounts';
import { openSession, overflowsSideways, PHONE, shown, snapshot } from './support/browser.ts';
import { startBrowserStack } from './support/browser-stack.ts';
import { newAccountWithOwner, PASSWORD, readNewKey, setPassword, USER_AGENT, viewer } from './support/owner.ts';

/**
 * The console in a real browser (Debian's Chromium through playwright-core) against a real stack,
 * driven as a person drives it, by role and accessible name. The console by keyboard alone and at phone width, and what it says when API access is disabled.
 */

const t = startBrowserStack();

describe('the console, in Chromium', () => {
  it('works by keyboard alone, with a visible focus, fits a phone, and says when API access is disabled', async () => {
    const { account, email, setPasswordUrl } = await newAccountWithOwner(t, 'Keyboard & Phone Ltd');
    const { page, consoleErrors } = await openSession(t.browser, { viewport: PHONE, userAgent: USER_AGENT });
    await setPassword(page, setPasswordUrl);
    await shown(page.getByRole('heading', { level: 1, name: 'Keyboard & Phone Ltd' }));
    await page.getByRole('link', { name: 'Sign out' }).click();
    await page.waitForURL(`${t.origin}/sign-in`);

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
    expect((await viewer(t, apiKey)).status).toBe(200);
    expect(await overflowsSideways(page)).toBe(false);
    // Escape closes the dialog and the key with it.
    await page.keyboard.press('Escape');
    await page.locator('dialog').waitFor({ state: 'detached' });
    expect(await page.content()).not.toContain(apiKey);
    expect(await overflowsSideways(page)).toBe(false);

    // With API access disabled by an operator, the overview says so, why requests fail, and whom to ask.
    await setApiAccess(t.stack.operator, { accountId: account.id, enabled: false });
    expect((await viewer(t, apiKey)).status).toBe(403);
    // Opening the page is enough: it reads the account again, without a reload.
    await page.getByRole('link', { name: 'Overview', exact: true }).click();
    await shown(page.getByText('Disabled', { exact: true }));
    const access = page.getByRole('region', { name: 'API access' });
    expect(await access.textContent()).toContain('HTTP 403');
    expect(await access.textContent()).toContain('Ask them to enable it');
    expect(await overflowsSideways(page)).toBe(false);
    await snapshot(page, 'overview-disabled');

    // The security log comes 50 events a page, newest first; older ones on request.
    for (let n = 1; n <= 50; n += 1) await createKey(t.stack.operator, { accountId: account.id, name: `batch-${n}` });
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
});
