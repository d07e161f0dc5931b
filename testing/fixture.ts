import { afterAll, beforeAll } from 'vitest';
import { ApiClient } from './client.ts';
import { startStack, type StackOptions, type TestStack } from './stack.ts';

export { ApiClient } from './client.ts';
export { NO_RATE_LIMIT_ENV } from './requests.ts';

interface StackParts {
  /** The running stack; read inside a test or hook, once `beforeAll` has started it. */
  readonly stack: TestStack;
  /** A fresh account with one key, for tests that count or list everything an account has. */
  newAccount(name?: string): Promise<ApiClient>;
}

/** The stack and the named accounts (each with one key, created when the stack starts), read inside a test or hook. */
export type StackFixture<Name extends string> = StackParts & Readonly<Record<Name, ApiClient>>;

/**
 * Starts one stack for the test file (in `beforeAll`, closed in `afterAll`) with named accounts,
 * `alice` and `bob` unless `accounts` names others; each account's name is its name capitalised.
 * Call it at the top of a file or a describe block; `accounts: []` for none. The names `stack` and
 * `newAccount` are taken.
 */
export function useStack<const Name extends string = 'alice' | 'bob'>(options: StackOptions & { accounts?: readonly Name[] } = {}): StackFixture<Name> {
  const { accounts: names = ['alice', 'bob'] as unknown as readonly Name[], ...stackOptions } = options;
  let stack: TestStack | undefined;
  const accounts = {} as Record<Name, ApiClient>;

  beforeAll(async () => {
    const running = await startStack(stackOptions);
    stack = running;
    const clients = await Promise.all(names.map(async (name) => new ApiClient(running, await running.createAccountWithKey(capitalised(name)))));
    names.forEach((name, index) => (accounts[name] = clients[index]!));
  });
  afterAll(async () => {
    await stack?.close();
  });

  const started = () => {
    if (!stack) throw new Error('the stack starts in beforeAll: read the fixture inside a test or a hook');
    return stack;
  };
  const fixture = {
    get stack() {
      return started();
    },
    newAccount: async (name?: string) => new ApiClient(started(), await started().createAccountWithKey(name)),
  };
  for (const name of names) Object.defineProperty(fixture, name, { get: () => (started(), accounts[name]), enumerable: true });
  return fixture as StackFixture<Name>;
}

const capitalised = (name: string) => name.charAt(0).toUpperCase() + name.slice(1);
