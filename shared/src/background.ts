import type { Logger } from './logger.ts';

export interface BackgroundLoop {
  /** Runs the step now rather than after its delay (e.g. right after a commit that gave it work). */
  wake(): void;
  /** Stops the loop; waits for a step in progress, so shutdown cuts no step off halfway. */
  stop(): Promise<void>;
}

/**
 * Runs `step` over and over, never two at a time: after each run it waits the delay the step
 * returns, or less if woken. A step that throws is logged and tried again after `errorDelayMs`.
 */
export function startLoop(
  name: string,
  step: () => Promise<number>,
  log: Pick<Logger, 'error'>,
  errorDelayMs = 1_000,
): BackgroundLoop {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let wokenWhileRunning = false;

  const run = () => {
    timer = undefined;
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
      schedule(again ? 0 : delayMs);
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
        schedule(0);
      }
    },
    stop: async () => {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
