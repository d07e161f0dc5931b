import { inspect } from 'node:util';
import { describe, expect, it } from 'vitest';
import { OtsClient } from '../src/index.ts';

describe('the API key', () => {
  it('is not written with a client or a stream that is logged or serialised', () => {
    const apiKey = 'svc_live_4eC39HqLyjWDarjtT1zdp7dc0Xyz';
    const client = new OtsClient({ apiKey, baseUrl: 'http://127.0.0.1:4000' });
    const stream = client.events.stream();
    for (const written of [inspect(client, { depth: null, showHidden: true }), JSON.stringify(client), inspect(stream, { depth: null }), JSON.stringify(stream)]) {
      expect(written).not.toContain(apiKey);
    }
  });
});
