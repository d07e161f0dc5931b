import { sql, type Kysely } from 'kysely';
import { createOutboxTable } from '@ots/shared/outbox';

/**
 * The fills subgraph's own outbox (`RelayConsumer` in shared/src/outbox.ts): every `fill.recorded`
 * row written to `outbox` is written here too, in the same statement, and a relay of its own posts
 * this table to fills' recovery route. Before, one relay posted a batch's fills to fills and then the
 * whole batch to events, so while fills was down no order event reached events either.
 *
 * A trigger rather than a second insert in recordFill's statement: the fills released before this
 * one (still running during a rolling upgrade, and writing to `outbox` alone) get their rows copied
 * too, as does any writer of the event to come. It costs one row insert in the same statement, only
 * for `fill.recorded` rows (the `when` clause is checked without calling the function). The rows
 * waiting in `outbox` now are copied as well; fills keeps each fill once by its id, so one an older
 * relay has sent already changes nothing.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await createOutboxTable(db, 'fills_outbox');
  await sql`
    create function orders.copy_fill_recorded_to_fills_outbox() returns trigger language plpgsql as $$
    begin
      insert into orders.fills_outbox (id, account_id, type, occurred_at, data, created_at)
      values (new.id, new.account_id, new.type, new.occurred_at, new.data, new.created_at);
      return null;
    end $$`.execute(db);
  await sql`
    create trigger outbox_fill_recorded_to_fills_outbox after insert on orders.outbox
    for each row when (new.type = 'fill.recorded') execute function orders.copy_fill_recorded_to_fills_outbox()`.execute(db);
  await sql`
    insert into orders.fills_outbox (id, account_id, type, occurred_at, data, created_at)
    select id, account_id, type, occurred_at, data, created_at from orders.outbox where type = 'fill.recorded'`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop trigger outbox_fill_recorded_to_fills_outbox on orders.outbox`.execute(db);
  await sql`drop function orders.copy_fill_recorded_to_fills_outbox()`.execute(db);
  await db.schema.dropTable('fills_outbox').execute();
}
