import { describe, expect, it } from 'vitest';
import { PositionBook } from '../fills-bot.ts';

describe("the fills bot's positions", () => {
  const book = () => {
    const positions = new PositionBook();
    const apply = (side: 'BUY' | 'SELL', quantity: string, strategyId: string | null = 'strategy-1') =>
      positions.apply({ symbol: 'BOT', side, quantity, orderSubmission: { strategyId } });
    return { positions, apply };
  };

  it('add up exactly over the whole range of the API decimals: 20 digits before the point and 10 after', () => {
    const { positions, apply } = book();
    apply('BUY', '10000000000');
    apply('BUY', '0.0000000001');
    expect(positions.positions).toEqual({ 'strategy-1': { BOT: '10000000000.0000000001' } });
    apply('SELL', '10000000000');
    apply('BUY', '99999999999999999999.9999999999');
    expect(positions.positions).toEqual({ 'strategy-1': { BOT: '100000000000000000000' } });
  });

  it('are flat after 0.1 + 0.2 - 0.3, and leave out orders without a strategy', () => {
    const { positions, apply } = book();
    apply('BUY', '0.1');
    apply('BUY', '0.2');
    apply('SELL', '0.3');
    apply('BUY', '5', null);
    expect(positions.positions).toEqual({ 'strategy-1': { BOT: '0' } });
  });
});
