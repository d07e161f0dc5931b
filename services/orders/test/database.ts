import { afterAll, inject } from 'vitest';
import { createDatabase } from '@ots/shared/db';
import { newId } from '@ots/shared/ids';
import { migrateService } from '@ots/shared/service';
import { createTestDatabase } from '@ots/shared/testing/database';
import { migrations, SCHEMA } from '../migrations/index.ts';
import type { OrdersDatabase, OrdersDb } from '../src/repository.ts';

export interface OrdersTestDatabase {
  url: string;
  db: OrdersDb;
  close(): Promise<void>;
}

/** A fresh database holding only the orders schema, migrated: for tests of the SQL without a server. */
export async function openOrdersDatabase(): Promise<OrdersTestDatabase> {
  const database = await createTestDatabase(inject('postgresUrl'));
  await migrateService({ schema: SCHEMA, migrations }, database.url);
  const db = createDatabase<OrdersDatabase>({ url: database.url, schema: SCHEMA, applicationName: 'orders-test', maxConnections: 30 });
  return {
    url: database.url,
    db,
    close: async () => {
      await db.destroy();
      await database.drop();
    },
  };
}

/**
 * The calling test file's own orders database, open while its tests are collected and closed after
 * the last of them. Await it at the top level of the file.
 */
export async function useOrdersDatabase(): Promise<OrdersTestDatabase> {
  const database = await openOrdersDatabase();
  afterAll(() => database.close());
  return database;
}

/** A made-up account id: the orders schema keeps no account table, it only scopes by the id. */
export const someAccount = (): string => newId();
