import { randomBytes } from 'node:crypto';
import { inject } from 'vitest';
import { createDatabase } from '@ots/shared/db';
import { newId } from '@ots/shared/ids';
import { migrateService } from '@ots/shared/service';
import { createTestDatabase, type TestDatabase } from '@ots/shared/testing/database';
import type { Clock } from '../src/dispatcher.ts';
import { ingestEvents, type EventsDb, type IncomingEvent } from '../src/repository.ts';
import { eventsService } from '../src/service.ts';

/** A fresh database with the events schema migrated, for tests below the GraphQL layer. */
export async function openEventsDatabase(): Promise<{ db: EventsDb; database: TestDatabase; close(): Promise<void> }> {
  const database = await createTestDatabase(inject('postgresUrl'));
  await migrateService(eventsService, database.url);
  const db = createDatabase<never>({ url: database.url, schema: 'events', applicationName: 'events-test', maxConnections: 20 }) as unknown as EventsDb;
  return {
    db,
    database,
    close: async () => {
      await db.destroy();
      await database.drop();
    },
  };
}

/** A clock the test moves forward by hand. */
export class ManualClock implements Clock {
  private current: number;
  constructor(start = Date.now()) {
    this.current = start;
  }
  now(): Date {
    return new Date(this.current);
  }
  advance(ms: number): void {
    this.current += ms;
  }
  set(at: Date): void {
    this.current = at.getTime();
  }
}

export function strategyEvent(accountId: string, occurredAt: Date, name = 'S'): IncomingEvent {
  const id = newId(occurredAt.getTime());
  return { id, accountId, type: 'strategy.created', occurredAt, data: { id: newId(), name } };
}

export async function ingest(db: EventsDb, events: IncomingEvent[], now: Date): Promise<number> {
  return (await ingestEvents(db, JSON.stringify({ events }), now)).accepted;
}

/** The key that seals signing secrets in these tests. */
export const secretKey = randomBytes(32);
