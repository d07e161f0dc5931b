import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { SWEEP_BATCH_SIZE, sweepPeriodically, type SweepReport } from '../src/sweeper.ts';

const report = (examined: number, ordersUnavailable = false): SweepReport => ({ examined, applied: examined, refused: 0, ordersUnavailable });

beforeEach(() => {
  vi.useFakeTimers();
});

afterEach(() => {
  vi.useRealTimers();
});

describe('sweepPeriodically', () => {
  it('sweeps once per interval', async () => {
    const sweep = vi.fn(async () => report(0));
    const stop = sweepPeriodically(sweep, 1_000, { error: vi.fn() });
    await vi.advanceTimersByTimeAsync(999);
    expect(sweep).toHaveBeenCalledTimes(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(sweep).toHaveBeenCalledTimes(1);
    await vi.advanceTimersByTimeAsync(2_000);
    expect(sweep).toHaveBeenCalledTimes(3);
    await stop();
  });

  it('sweeps again at once after a full batch, but not while orders is unavailable', async () => {
    const results = [report(SWEEP_BATCH_SIZE), report(SWEEP_BATCH_SIZE, true), report(3)];
    const sweep = vi.fn(async () => results.shift() ?? report(0));
    const stop = sweepPeriodically(sweep, 1_000, { error: vi.fn() });
    await vi.advanceTimersByTimeAsync(1_000);
    // "At once" is the next timer tick, 1 ms on Node's clock.
    await vi.advanceTimersByTimeAsync(1);
    expect(sweep).toHaveBeenCalledTimes(2);
    await vi.advanceTimersByTimeAsync(998);
    expect(sweep).toHaveBeenCalledTimes(2);
    await vi.advanceTimersByTimeAsync(2);
    expect(sweep).toHaveBeenCalledTimes(3);
    await stop();
  });

  it('logs a failed sweep and keeps sweeping', async () => {
    const error = vi.fn();
    const sweep = vi.fn().mockRejectedValueOnce(new Error('database restarting')).mockResolvedValue(report(0));
    const stop = sweepPeriodically(sweep, 1_000, { error });
    await vi.advanceTimersByTimeAsync(2_000);
    expect(error).toHaveBeenCalledTimes(1);
    expect(sweep).toHaveBeenCalledTimes(2);
    await stop();
  });

  it('waits for the sweep in progress when stopped, and starts no other', async () => {
    let finish: (() => void) | undefined;
    const sweep = vi.fn(() => new Promise<SweepReport>((resolve) => (finish = () => resolve(report(SWEEP_BATCH_SIZE)))));
    const stop = sweepPeriodically(sweep, 1_000, { error: vi.fn() });
    await vi.advanceTimersByTimeAsync(1_000);
    expect(sweep).toHaveBeenCalledTimes(1);

    let stopped = false;
    const stopping = stop().then(() => {
      stopped = true;
    });
    await vi.advanceTimersByTimeAsync(5_000);
    expect(stopped).toBe(false);
    finish?.();
    await stopping;
    expect(stopped).toBe(true);
    // Even a full batch schedules nothing once stopped.
    await vi.advanceTimersByTimeAsync(5_000);
    expect(sweep).toHaveBeenCalledTimes(1);
  });
});
