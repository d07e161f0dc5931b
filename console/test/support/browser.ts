import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type BrowserContext, type BrowserContextOptions, type ConsoleMessage, type Locator, type Page } from 'playwright-core';
import { onTestFailed } from 'vitest';

/** Debian's Chromium (`apt-get install chromium`), or CHROMIUM_PATH: playwright-core downloads no browser. */
const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

const SCREENSHOT_DIR = fileURLToPath(new URL('../../../test-results/console/', import.meta.url));

export const LAPTOP = { width: 1280, height: 800 };
export const PHONE = { width: 390, height: 844 };

export async function launchBrowser(): Promise<Browser> {
  if (!existsSync(CHROMIUM_PATH)) throw new Error(`no Chromium at ${CHROMIUM_PATH}: apt-get install chromium, or set CHROMIUM_PATH`);
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    headless: true,
    // Containers often have a small /dev/shm; Chromium refuses its sandbox to root, which CI runs as.
    args: ['--disable-dev-shm-usage', ...(process.getuid?.() === 0 ? ['--no-sandbox'] : [])],
  });
}

export interface Session {
  context: BrowserContext;
  page: Page;
  /** Console errors seen so far, such as a Content-Security-Policy refusal. */
  consoleErrors: string[];
}

/**
 * A fresh browser profile with one page. When the running test fails, every page of the profile is
 * saved as a screenshot under test-results/console/, named after the test.
 */
export async function openSession(browser: Browser, options: BrowserContextOptions = {}): Promise<Session> {
  const session = await openProfile(browser, options);
  saveScreenshotsOnFailure(session.context);
  return session;
}

/** A fresh browser profile with one page, for a journey whose steps are tests of their own (each step then calls saveScreenshotsOnFailure). */
export async function openProfile(browser: Browser, options: BrowserContextOptions = {}): Promise<Session> {
  const context = await browser.newContext({ viewport: LAPTOP, ...options });
  const page = await context.newPage();
  const consoleErrors: string[] = [];
  context.on('console', (message: ConsoleMessage) => {
    // A signed-out page asks for the session first and is answered 401: that is the expected way in.
    if (message.type() === 'error' && !/status of 401/.test(message.text())) consoleErrors.push(message.text());
  });
  context.on('weberror', (error) => consoleErrors.push(error.error().message));
  return { context, page, consoleErrors };
}

/** If the running test fails, every page of the profile is saved as a screenshot under test-results/console/, named after the test. */
export function saveScreenshotsOnFailure(context: BrowserContext): void {
  onTestFailed(async ({ task }) => {
    mkdirSync(SCREENSHOT_DIR, { recursive: true });
    const name = task.name.replace(/[^A-Za-z0-9]+/g, '-').slice(0, 80);
    for (const [index, open] of context.pages().entries()) {
      await open.screenshot({ path: join(SCREENSHOT_DIR, `${name}-${index + 1}.png`), fullPage: true }).catch(() => {});
    }
  });
}

/** Waits for the element to show, as a person waits for a page, and returns it. */
export async function shown(locator: Locator, timeout = 10_000): Promise<Locator> {
  await locator.waitFor({ state: 'visible', timeout });
  return locator;
}

/**
 * With CONSOLE_SCREENSHOTS=<folder>, the tests also save what each page looks like there (for the
 * README and for looking at the console at laptop and phone widths); without it, nothing.
 */
export async function snapshot(page: Page, name: string): Promise<void> {
  const folder = process.env.CONSOLE_SCREENSHOTS;
  if (!folder) return;
  mkdirSync(folder, { recursive: true });
  const width = page.viewportSize()?.width ?? 0;
  await page.screenshot({ path: join(folder, `console-${name}-${width}.png`) });
}

/** Whether the page is wider than its window (something a person would have to scroll sideways to see). */
export function overflowsSideways(page: Page): Promise<boolean> {
  return page.evaluate(() => document.documentElement.scrollWidth > window.innerWidth);
}
