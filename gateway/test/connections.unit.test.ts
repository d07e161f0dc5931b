import { describe, expect, it } from 'vitest';
import { createLogger } from '@ots/shared/logger';
import { connectionCap } from '../src/connections.ts';

const logger = createLogger('connections', 'silent');

describe('the cap on open connections', () => {
  it('stays below the file limit: unset, it is 80% of the limit; set above that, it is lowered to it', () => {
    expect(connectionCap(undefined, 20_000, logger)).toBe(16_000);
    expect(connectionCap(50_000, 20_000, logger)).toBe(16_000);
    expect(connectionCap(500, 20_000, logger)).toBe(500);
  });

  it('without a readable file limit, takes the configured cap or 4,096', () => {
    expect(connectionCap(undefined, undefined, logger)).toBe(4_096);
    expect(connectionCap(100_000, undefined, logger)).toBe(100_000);
  });
});
