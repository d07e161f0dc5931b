import { describe, expect, it } from 'vitest';
import { startLoop } from '../src/background.ts';
import { relayWakeIntervalMs } from '../src/outbox.ts';

const silent = { error: () => undefined };

describe('a background loop woken more often than its interval', () => {
  it('serves wake-ups that come closer together than the interval asked at the last step\'s start with one step', async () => {
    const starts: number[] = [];
    const intervals = [40, 10];
    const asked: number[] = [];
    let done!: () => void;
    const finished = new Promise<void>((resolve) => (done = resolve));
    const loop = startLoop(
      'test loop',
      async () => {
        starts.push(performance.now());
        if (starts.length === 3) done();
        return 60_000;
      },
      silent,
      {
        minWakeIntervalMs: () => {
          const interval = intervals[asked.length] ?? 10;
          asked.push(interval);
          return interval;
        },
      },
    );
    // Woken over and over from the start: each step waits out the interval asked as the one before began.
    const waker = setInterval(() => loop.wake(), 1);
    await finished;
    clearInterval(waker);
    await loop.stop();
    expect(asked.length).toBe(starts.length);
    // Node's timers count whole milliseconds of the loop's clock, so against performance.now() one can
    // fire up to a millisecond early, and a step's start is taken a moment after its timer's.
    const TIMER_SLACK_MS = 2;
    expect(starts[1]! - starts[0]!).toBeGreaterThanOrEqual(40 - TIMER_SLACK_MS);
    expect(starts[2]! - starts[1]!).toBeGreaterThanOrEqual(10 - TIMER_SLACK_MS);
  });
});

describe('the outbox relay\'s interval', () => {
  it('is 10 ms while the event loop had time to spare, 50 ms while it was busy nearly all the time', () => {
    expect([0, 0.5, 0.89].map((load) => relayWakeIntervalMs(load, 0))).toEqual([10, 10, 10]);
    expect([0.9, 0.97, 1].map((load) => relayWakeIntervalMs(load, 0))).toEqual([50, 50, 50]);
  });

  it('is 50 ms while the producer serves two requests or more, whatever the loop did before', () => {
    expect([0, 1, 2, 8].map((requests) => relayWakeIntervalMs(0.3, requests))).toEqual([10, 10, 50, 50]);
  });
});
