import { sql, type Kysely } from 'kysely';

/**
 * Issue 25: orders decides and records each fill (and writes its `fill.recorded` event); fills keeps
 * it from that decision, applied from the start. Nothing is pending any more, so nothing needs the
 * key a pending fill was recorded with (the sweeper acted for it), the pending fills' index, or the
 * outbox. Run once the release before has settled every pending fill and relayed its outbox: this
 * migration refuses to drop either while it holds a row.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    do $$ begin
      if exists (select 1 from fills where status = 'PENDING') then
        raise exception 'fills are still pending: let the previous release''s sweeper settle them before this migration';
      end if;
      if exists (select 1 from outbox) then
        raise exception 'the fills outbox still holds events: let the previous release''s relay send them before this migration';
      end if;
    end $$`.execute(db);
  await db.schema.dropIndex('fills_account_pending_id').execute();
  await db.schema.alterTable('fills').dropColumn('api_key_id').execute();
  await db.schema.dropTable('outbox').execute();
}

export async function down(): Promise<void> {
  throw new Error('006_kept_from_orders cannot be undone: the keys of recorded fills and the pending machinery are gone');
}
