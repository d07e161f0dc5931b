import type { Migration } from 'kysely';
import * as orderSubmissions from './001_order_submissions.ts';
import * as commitOrder from './002_commit_order.ts';
import * as replaceAndLateFills from './003_replace_and_late_fills.ts';
import * as outbox from './004_outbox.ts';
import * as fillsRecordedByOrders from './005_fills_recorded_by_orders.ts';
import * as applicationsLackingExecutionId from './006_applications_lacking_execution_id.ts';
import * as fillsOutbox from './007_fills_outbox.ts';

export const SCHEMA = 'orders';

/** Applied in key order; a migration, once released, is never edited. */
export const migrations: Record<string, Migration> = {
  '001_order_submissions': orderSubmissions,
  '002_commit_order': commitOrder,
  '003_replace_and_late_fills': replaceAndLateFills,
  '004_outbox': outbox,
  '005_fills_recorded_by_orders': fillsRecordedByOrders,
  '006_applications_lacking_execution_id': applicationsLackingExecutionId,
  '007_fills_outbox': fillsOutbox,
};
