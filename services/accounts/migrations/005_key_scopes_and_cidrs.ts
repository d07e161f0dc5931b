import { sql, type Kysely } from 'kysely';

/**
 * What a key may do and from where (contract section 5, "Scopes and allowed addresses"). Keys made
 * before scopes existed keep every scope; an empty address list means any address. The security
 * log gains the changes of both and the refusals of a key used from elsewhere.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('api_keys')
    .addColumn('scopes', sql`text[]`, (col) =>
      col.notNull().defaultTo(sql`array['read', 'orders:write', 'fills:write', 'strategies:write', 'webhooks:write']::text[]`),
    )
    .addColumn('allowed_cidrs', sql`text[]`, (col) => col.notNull().defaultTo(sql`array[]::text[]`))
    .execute();
  await sql`alter table api_keys alter column scopes drop default`.execute(db);
  await sql`alter table security_events drop constraint security_events_type_check`.execute(db);
  await sql`alter table security_events add constraint security_events_type_check check (type in (
    'key.created', 'key.rolled', 'key.revoked', 'key.updated', 'key.refused_address',
    'sign_in.succeeded', 'sign_in.failed', 'password.set'))`.execute(db);
  // What the change or the refusal was: the scopes and addresses after an update, the refused address.
  await db.schema.alterTable('security_events').addColumn('detail', 'jsonb').execute();
  // Gateways cache key records without these fields; a new generation makes them read the keys again.
  await sql`update key_cache_generation set generation = generation + 1`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('security_events').dropColumn('detail').execute();
  await sql`delete from security_events where type in ('key.updated', 'key.refused_address')`.execute(db);
  await sql`alter table security_events drop constraint security_events_type_check`.execute(db);
  await sql`alter table security_events add constraint security_events_type_check check (type in (
    'key.created', 'key.rolled', 'key.revoked', 'sign_in.succeeded', 'sign_in.failed', 'password.set'))`.execute(db);
  await db.schema.alterTable('api_keys').dropColumn('allowed_cidrs').dropColumn('scopes').execute();
}
