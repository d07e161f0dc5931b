import { randomBytes } from 'node:crypto';
import { newId } from '@ots/shared/ids';
import { useSchemaDatabase, type SchemaTestDatabase } from '@ots/shared/testing/database';
import { migrations, onlineIndexes, SCHEMA } from '../../migrations/index.ts';
import type { Clock } from '../../src/dispatcher.ts';
import { ingestEvents, type EventsDatabase, type EventsDb, type IncomingEvent } from '../../src/repository.ts';

/** The calling test file's own events database, migrated, closed after its last test (useSchemaDatabase). */
export function useEventsDatabase(): Promise<SchemaTestDatabase<EventsDatabase>> {
  return useSchemaDatabase<EventsDatabase>({ schema: SCHEMA, migrations, onlineIndexes }, { applicationName: 'events-test', maxConnections: 20 });
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
