import type { Browser } from 'playwright-core';
import { afterAll, beforeAll } from 'vitest';
import { startStack, type TestStack } from '../../../testing/stack.ts';
import { ensureConsoleBuilt } from '../../ensure-built.ts';
import { launchBrowser } from './browser.ts';

/** A stack serving the built console and a Chromium to drive it; read inside a test or hook, once `beforeAll` has started them. */
export interface BrowserStack {
  readonly stack: TestStack;
  readonly browser: Browser;
  /** The gateway's origin, where the console is served. */
  readonly origin: string;
}

/** Builds the console if it is stale, starts a stack and a browser for the test file (in `beforeAll`), closes them in `afterAll`. */
export function startBrowserStack(): BrowserStack {
  let stack: TestStack | undefined;
  let browser: Browser | undefined;

  beforeAll(async () => {
    ensureConsoleBuilt(() => {});
    [stack, browser] = await Promise.all([startStack(), launchBrowser()]);
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await stack?.close();
  });

  const running = () => {
    if (!stack || !browser) throw new Error('the stack and browser start in beforeAll: read the fixture inside a test or a hook');
    return { stack, browser };
  };
  return {
    get stack() {
      return running().stack;
    },
    get browser() {
      return running().browser;
    },
    get origin() {
      return new URL(running().stack.gatewayUrl).origin;
    },
  };
}
