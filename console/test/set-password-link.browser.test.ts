import { describe, expect, it } from 'vitest';
import { openSession, shown } from './support/browser.ts';
import { startBrowserStack } from './support/browser-stack.ts';
import { newAccountWithOwner, setPassword, USER_AGENT } from './support/owner.ts';

/**
 * The console in a real browser (Debian's Chromium through playwright-core) against a real stack,
 * driven as a person drives it, by role and accessible name. A set-password link used twice, and an address the console does not have.
 */

const t = startBrowserStack();

describe('the console, in Chromium', () => {
  it("a used set-password link says so as the page opens, before any form; an unknown address shows the console's not-found page", async () => {
    const { setPasswordUrl } = await newAccountWithOwner(t, 'Spent Link GmbH');
    const { page, consoleErrors } = await openSession(t.browser, { userAgent: USER_AGENT });
    await setPassword(page, setPasswordUrl);
    await shown(page.getByRole('heading', { level: 1, name: 'Spent Link GmbH' }));
    await page.getByRole('link', { name: 'Sign out' }).click();
    await page.waitForURL(`${t.origin}/sign-in`);

    // The same link again: the page says it is used up, and asks for no password.
    await page.goto(setPasswordUrl);
    await shown(page.getByRole('alert').filter({ hasText: 'This link is invalid or has expired' }));
    expect(await page.getByLabel('New password').count()).toBe(0);
    expect(await page.getByRole('button', { name: 'Set password' }).count()).toBe(0);
    await shown(page.getByRole('link', { name: 'Sign in' }));

    // An address the console does not have: its own page, not the server's JSON.
    const response = await page.goto(`${t.origin}/settings/no-such-page`);
    expect(response!.status()).toBe(404);
    await shown(page.getByRole('heading', { name: 'Page not found' }));
    await shown(page.getByRole('link', { name: 'Go to the overview' }));
    // The t.browser reports the refused link check and the 404 itself; nothing else went wrong.
    expect(consoleErrors.filter((error) => !/status of (400|404)/.test(error))).toEqual([]);
    await page.context().close();
  });
});
