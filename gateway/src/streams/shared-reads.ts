/**
 * A wake-up reaches every stream of an account at once, and the streams of one key that stand at the
 * same place then ask the events service the very same question (a position always seals to the
 * same cursor: shared/src/sealed-cursors.ts). Eight such streams cost eight feed reads per commit
 * without this; with it they cost one, and the events service's work per commit no longer grows
 * with the number of streams that follow it.
 *
 * A read joins only a call begun since the latest wake-up: a call begun before it may have read
 * the feed before the commit it announces, and a stream that consumed that wake-up would then wait
 * for the next one with the commit unseen. Nothing is kept once a call answers.
 *
 * Ten lines rather than a memoising library: what matters here is when a call may be joined, which
 * no cache's options say.
 */
export class SharedReads<Answer> {
  private readonly inFlight = new Map<string, Promise<Answer>>();
  private wakeups = 0;

  /** A wake-up is being delivered: reads from now on start calls of their own. */
  woken(): void {
    this.wakeups += 1;
  }

  /** `read()`'s answer, or that of an identical call (same `question`) begun since the latest wake-up. */
  read(question: string, read: () => Promise<Answer>): Promise<Answer> {
    const key = `${this.wakeups}\n${question}`;
    let answer = this.inFlight.get(key);
    if (!answer) {
      answer = read().finally(() => this.inFlight.delete(key));
      this.inFlight.set(key, answer);
    }
    return answer;
  }
}
