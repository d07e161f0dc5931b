import { sql, type Kysely } from 'kysely';

/**
 * When the endpoint's latest attempt failed: a failure long after the one before (no attempt in
 * between) starts a new run of failures instead of continuing `failing_since`'s (domain.ts
 * `failureStreakStart`). Endpoints failing now take it from their latest failed attempt on record,
 * so that a run in progress is not restarted by the release.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('webhook_endpoints').addColumn('last_failed_at', sql`timestamptz(3)`).execute();
  await sql`
    update events.webhook_endpoints e
    set last_failed_at = (
      select max(a.attempted_at) from events.webhook_attempts a
      where a.account_id = e.account_id and a.endpoint_id = e.id and not a.succeeded
        -- An attempt cut short by the service's own stop is no failure of the endpoint (dispatcher.ts).
        and a.failure is distinct from 'interrupted: the events service stopped during the attempt'
    )
    where e.failing_since is not null`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('webhook_endpoints').dropColumn('last_failed_at').execute();
}
