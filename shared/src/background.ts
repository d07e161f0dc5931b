import type { Logger } from './logger.ts';

export interface BackgroundLoop {
  /** Runs the step now rather than after its delay (e.g. right after a commit that gave it work). */
  wake(): void;
  /** Stops the loop; waits for a step in progress, so shutdown cuts no step off halfway. */
  stop(): Promise<void>;
}

export interface LoopOptions {
  /** How long after a failed step to try again. */
  errorDelayMs?: number;
  /**
   * The least time from one step's start to the next one's when woken: wake-ups that come closer
   * together are served by one step, so a burst of work is handled in batches rather than one
   * step per wake-up. A function is asked as each step starts, for the interval after that step.
   */
  minWakeIntervalMs?: number | (() => number);
}

/**
 * Runs `step` over and over, never two at a time: after each run it waits the delay the step
 * returns, or less if woken. A step that throws is logged and tried again after `errorDelayMs`.
 */
export function startLoop(name: string, step: () => Promise<number>, log: Pick<Logger, 'error'>, options: LoopOptions = {}): BackgroundLoop {
  const errorDelayMs = options.errorDelayMs ?? 1_000;
  const { minWakeIntervalMs: fixedOrAsked = 0 } = options;
  const nextMinWakeInterval = typeof fixedOrAsked === 'function' ? fixedOrAsked : () => fixedOrAsked;
  let minWakeIntervalMs = 0;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let wokenWhileRunning = false;
  let lastStart = -Infinity;
  const wakeDelay = () => Math.max(0, lastStart + minWakeIntervalMs - performance.now());

  const run = () => {
    timer = undefined;
    lastStart = performance.now();
    minWakeIntervalMs = nextMinWakeInterval();
    running = step().then(
      (delayMs) => delayMs,
      (error: unknown) => {
        log.error({ err: error }, `${name} failed; trying again shortly`);
        return errorDelayMs;
      },
    ).then((delayMs) => {
      running = undefined;
      const again = wokenWhileRunning;
      wokenWhileRunning = false;
      schedule(again ? Math.min(delayMs, wakeDelay()) : delayMs);
    });
  };
  const schedule = (delayMs: number) => {
    if (stopped) return;
    timer = setTimeout(run, delayMs);
  };
  schedule(0);

  return {
    wake: () => {
      if (stopped) return;
      if (running) {
        wokenWhileRunning = true;
      } else if (timer) {
        clearTimeout(timer);
        schedule(wakeDelay());
      }
    },
    stop: async () => {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
