import { describe, expect, it } from 'vitest';
import { parseIngestBatch } from '../src/ingest.ts';

describe('ingest batches', () => {
  const valid = {
    id: '01936f0e-0000-7000-8000-000000000001',
    accountId: '01936f0e-0000-7000-8000-000000000002',
    type: 'strategy.created',
    occurredAt: '2026-11-23T09:00:00.000Z',
    data: { id: 'x' },
  };

  it('accepts well-formed events and refuses anything else, naming the event', () => {
    expect(parseIngestBatch({ events: [valid] }).ok).toBe(true);
    for (const broken of [{ ...valid, type: 'strategy.deleted' }, { ...valid, id: 'nope' }, { ...valid, data: [1] }, { ...valid, occurredAt: 'soon' }]) {
      const result = parseIngestBatch({ events: [valid, broken] });
      expect(!result.ok && result.error.message).toContain('events[1]');
    }
    expect(parseIngestBatch({}).ok).toBe(false);
  });
});
