import type { ServiceRuntime } from '@ots/shared/service';
import type { BaseContext } from '@ots/shared/subgraph-server';
import type { AccountsDatabase, AccountsDb } from './repository.ts';

export interface AccountsContext extends BaseContext {
  db: AccountsDb;
}

export function createAccountsContext(base: BaseContext, { db }: ServiceRuntime<AccountsDatabase>): AccountsContext {
  return { ...base, db };
}
