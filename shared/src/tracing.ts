/** Set by startTracing; read by stopTracing, which may live in another copy of this module. */
const STOP = Symbol.for('ots.tracing.stop');
type WithStop = { [STOP]?: () => Promise<void> };

/** Sends the spans still buffered and stops tracing; nothing when tracing is off. */
export async function stopTracing(): Promise<void> {
  const stop = (globalThis as WithStop)[STOP];
  delete (globalThis as WithStop)[STOP];
  await stop?.();
}
