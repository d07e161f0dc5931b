import type { Migration } from 'kysely';
import * as orderSubmissions from './001_order_submissions.ts';

export const SCHEMA = 'orders';

/** Applied in key order; a migration, once released, is never edited. */
export const migrations: Record<string, Migration> = {
  '001_order_submissions': orderSubmissions,
};
