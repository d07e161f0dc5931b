import type { Migration } from 'kysely';
import * as fills from './001_fills.ts';
import * as symbolIndex from './002_fills_symbol_index.ts';
import * as pendingWithoutOrderDetails from './003_pending_without_order_details.ts';
import * as outbox from './004_outbox.ts';
import * as pendingById from './005_pending_by_id.ts';
import * as keptFromOrders from './006_kept_from_orders.ts';

export const SCHEMA = 'fills';

/** Applied in key order; a migration, once released, is never edited. */
export const migrations: Record<string, Migration> = {
  '001_fills': fills,
  '002_fills_symbol_index': symbolIndex,
  '003_pending_without_order_details': pendingWithoutOrderDetails,
  '004_outbox': outbox,
  '005_pending_by_id': pendingById,
  '006_kept_from_orders': keptFromOrders,
};
