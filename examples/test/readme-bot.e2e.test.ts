import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { OtsClient } from '@ots/client';
import { TcpProxy } from '@ots/shared/testing/tcp-proxy';
import { NO_RATE_LIMIT_ENV, useStack } from '../../testing/fixture.ts';

/** The README's graphql-sse bot, as a user copies it, against the real stack. */
const t = useStack({ env: NO_RATE_LIMIT_ENV, accounts: [] });

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const README_ORIGIN = 'http://localhost:4000';

/** The code block that follows the README's "A bot that streams its fills" sentence. */
function readmeBot(): string {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const block = /A bot that streams its fills and resumes where it stopped[^\n]*\n\n```js\n([\s\S]*?)```/.exec(readme);
  if (!block) throw new Error('README.md has no graphql-sse bot block');
  return block[1]!;
}

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

describe("the README's graphql-sse bot", () => {
  it('handles every fill exactly once across a dropped connection, resuming from its stored cursor', async () => {
    const { apiKey } = await t.stack.createAccountWithKey();
    const gateway = new URL(t.stack.gatewayUrl);
    const relay = new TcpProxy(gateway.hostname, Number(gateway.port));
    await relay.start();
    cleanups.push(() => relay.cut());

    // Its own directory, as a user's project: the cursor file lands there, graphql-sse resolves from the repository.
    const directory = mkdtempSync(join(tmpdir(), 'ots-readme-bot-'));
    cleanups.push(() => rmSync(directory, { recursive: true, force: true }));
    symlinkSync(join(ROOT, 'node_modules'), join(directory, 'node_modules'));
    const source = readmeBot();
    expect(source).toContain(README_ORIGIN);
    writeFileSync(join(directory, 'bot.mjs'), source.replaceAll(README_ORIGIN, `http://127.0.0.1:${relay.port}`));

    const bot = spawn(process.execPath, ['bot.mjs'], { cwd: directory, env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', KEY: apiKey }, stdio: ['ignore', 'pipe', 'pipe'] });
    cleanups.push(() => bot.kill('SIGKILL'));
    let handled = '';
    let logged = '';
    bot.stdout.on('data', (chunk: Buffer) => (handled += chunk.toString()));
    bot.stderr.on('data', (chunk: Buffer) => (logged += chunk.toString()));
    const lines = () => handled.split('\n').filter(Boolean);

    const client = new OtsClient({ apiKey, baseUrl: gateway.origin });
    const order = await client.orders.submit({ symbol: 'RDME', side: 'BUY', type: 'LIMIT', limitPrice: '10', quantity: '100' });
    const record = (quantity: number) => client.fills.record({ orderSubmissionId: order.id, executionId: `readme-${quantity}`, quantity: String(quantity), price: '10' });
    await expect.poll(() => existsSync(join(directory, 'fills.cursor')), { timeout: 10_000 }).toBe(true);

    for (const quantity of [1, 2, 3]) await record(quantity);
    await expect.poll(() => lines().length, { timeout: 15_000 }).toBeGreaterThanOrEqual(3);
    // A blip: the open stream is cut, and the gateway answers again before graphql-sse's own retry would go.
    await relay.cut();
    await new Promise((resolve) => setTimeout(resolve, 200));
    await relay.restore();
    for (const quantity of [4, 5, 6]) await record(quantity);
    await expect.poll(() => lines().length, { timeout: 15_000 }).toBeGreaterThanOrEqual(6);
    // Long enough for a reconnect that re-sent the first `after` to have replayed fills 1-3 again.
    await new Promise((resolve) => setTimeout(resolve, 6_000));

    expect(lines().map((line) => line.split(' ')[2])).toEqual(['1', '2', '3', '4', '5', '6']);
    expect(logged).toMatch(/resuming from the stored cursor/);
  });
});
