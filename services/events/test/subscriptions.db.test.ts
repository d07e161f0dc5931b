import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { newId } from '@ots/shared/ids';
import type { EventType } from '@ots/shared/contracts/events';
import { ingestEvents, insertEndpoint, updateEndpoint, type EndpointStatus } from '../src/repository.ts';
import { useEventsDatabase } from './support/fixtures.ts';

const { db } = await useEventsDatabase();

interface Case {
  endpoint: { eventTypes: string[]; status: EndpointStatus; sameAccount: boolean };
  event: EventType;
  queued: boolean;
}

const enabled = (eventTypes: string[]) => ({ eventTypes, status: 'ENABLED' as const, sameAccount: true });

// The rule that decides who is sent what is the ingest statement's; it is tested here, on Postgres.
const cases: [string, Case][] = [
  ['no types means every type', { endpoint: enabled([]), event: 'order_submission.filled', queued: true }],
  ['the one type subscribed to', { endpoint: enabled(['fill.recorded']), event: 'fill.recorded', queued: true }],
  ['a type not subscribed to', { endpoint: enabled(['fill.recorded']), event: 'order_submission.filled', queued: false }],
  ['one of several types, not the first', { endpoint: enabled(['strategy.created', 'fill.recorded']), event: 'fill.recorded', queued: true }],
  ['none of several types', { endpoint: enabled(['strategy.created', 'strategy.updated']), event: 'fill.recorded', queued: false }],
  ['a type that only shares a prefix', { endpoint: enabled(['order_submission.filled']), event: 'order_submission.partially_filled', queued: false }],
  ['a type in another case', { endpoint: enabled(['Fill.Recorded']), event: 'fill.recorded', queued: false }],
  ['a disabled endpoint, every type', { endpoint: { eventTypes: [], status: 'DISABLED', sameAccount: true }, event: 'fill.recorded', queued: false }],
  ['a disabled endpoint, the type', { endpoint: { eventTypes: ['fill.recorded'], status: 'DISABLED', sameAccount: true }, event: 'fill.recorded', queued: false }],
  ["another account's endpoint, every type", { endpoint: { eventTypes: [], status: 'ENABLED', sameAccount: false }, event: 'fill.recorded', queued: false }],
];

describe('which endpoints an ingested event is queued for', () => {
  it.each(cases)('%s', async (_name, { endpoint, event, queued }) => {
    const now = new Date();
    const accountId = randomUUID();
    const endpointAccount = endpoint.sameAccount ? accountId : randomUUID();
    const row = await insertEndpoint(
      db,
      endpointAccount,
      { url: 'https://example.com/hooks', eventTypes: endpoint.eventTypes, description: null, secret: 'sealed' },
      now,
    );
    if (endpoint.status !== 'ENABLED') await updateEndpoint(db, endpointAccount, row.id, { status: endpoint.status }, now);

    const eventId = newId(now.getTime());
    const batch = { events: [{ id: eventId, accountId, type: event, occurredAt: now, data: {} }] };
    const ingested = await ingestEvents(db, JSON.stringify(batch), now);

    const messages = await db.selectFrom('webhook_messages').select('endpoint_id').where('event_id', '=', eventId).execute();
    expect(messages).toEqual(queued ? [{ endpoint_id: row.id }] : []);
    expect(ingested).toEqual({ accepted: 1, queued: queued ? 1 : 0 });
  });
});
