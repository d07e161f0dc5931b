import type { TestStack } from '../../../../testing/stack.ts';
import { inviteOwner, type OperatorScope } from '../../src/index.ts';

/** The console's refusals, as their bodies read. */
export const SIGN_IN_REQUIRED = { detail: 'Sign in required' };
export const SIGN_IN_FAILED = { detail: 'Email or password is incorrect' };
export const NOT_FOUND = { detail: 'Not found' };

/** What a key made in the console is checked with through the API. */
export const VIEWER = '{ viewer { account { id } apiKey { id } } }';

export interface ConsoleResponse {
  status: number;
  headers: Headers;
  // Parsed JSON when the body is JSON, else the text.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- parsed JSON, read field by field by the assertions
  body: any;
  setCookie: string | null;
}

/**
 * The console's HTTP API as the front end calls it: JSON, the page's own Origin on every POST, and
 * the `ots_session` cookie kept between calls like a browser keeps it.
 */
export class ConsoleClient {
  session: string | undefined;

  constructor(
    readonly base: string,
    private readonly defaults: Record<string, string> = {},
  ) {}

  async request(method: 'GET' | 'POST', path: string, body?: unknown, headers: Record<string, string> = {}): Promise<ConsoleResponse> {
    const merged: Record<string, string> = {
      ...(method === 'POST' ? { 'content-type': 'application/json', origin: this.base } : {}),
      ...(this.session ? { cookie: `ots_session=${this.session}` } : {}),
      ...this.defaults,
      ...headers,
    };
    const response = await fetch(`${this.base}${path}`, {
      method,
      // An empty value leaves the header out, as a browser that sends no Origin does.
      headers: Object.fromEntries(Object.entries(merged).filter(([, value]) => value !== '')),
      body: method === 'POST' ? JSON.stringify(body ?? {}) : undefined,
      redirect: 'manual',
    });
    const text = await response.text();
    let parsed: unknown = text;
    try {
      parsed = JSON.parse(text);
    } catch {
      // Pages and empty bodies stay text.
    }
    const setCookie = response.headers.get('set-cookie');
    const value = setCookie ? /^ots_session=([^;]*)/.exec(setCookie)?.[1] : undefined;
    if (value !== undefined) this.session = value === '' ? undefined : value;
    return { status: response.status, headers: response.headers, body: parsed, setCookie };
  }

  get(path: string, headers?: Record<string, string>) {
    return this.request('GET', path, undefined, headers);
  }

  post(path: string, body?: unknown, headers?: Record<string, string>) {
    return this.request('POST', path, body, headers);
  }
}

/** The gateway's origin, from its /graphql URL. */
export function baseOf(graphqlUrl: string): string {
  return new URL(graphqlUrl).origin;
}

/** The operator's scope for owner commands: links addressed to this stack's gateway, on the given clock. */
export function consoleOperator(stack: TestStack, now: () => number = Date.now): OperatorScope {
  return { ...stack.operator, config: { ...stack.operator.config, consoleBaseUrl: baseOf(stack.gatewayUrl) }, now: () => new Date(now()) };
}

export function tokenOf(setPasswordUrl: string): string {
  return new URL(setPasswordUrl).hash.replace(/^#token=/, '');
}

let owners = 0;

/** An account with an owner who has set `password` through their invite link, signed in on the returned client. */
export async function accountWithOwner(stack: TestStack, base: string, name: string, password = 'correct horse battery staple') {
  const account = await stack.createAccountWithKey(name);
  owners += 1;
  const email = `owner${owners}.${Date.now()}@example.com`;
  const invited = await inviteOwner(consoleOperator(stack), { accountId: account.accountId, email });
  const client = new ConsoleClient(base);
  const set = await client.post('/console/api/set-password', { token: tokenOf(invited.setPasswordUrl), password });
  if (set.status !== 200) throw new Error(`set-password answered ${set.status}: ${JSON.stringify(set.body)}`);
  return { ...account, ownerId: invited.ownerId, email, password, client };
}
