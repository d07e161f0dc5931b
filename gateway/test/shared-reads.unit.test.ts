import { describe, expect, it } from 'vitest';
import type { EventFeedAnswer } from '@ots/shared/event-feed';
import { EventStream, type StreamMessage } from '../src/streams/event-stream.ts';
import { SharedReads } from '../src/streams/shared-reads.ts';

/** A call that answers when told to. */
function pendingCall<T>() {
  let answer!: (value: T) => void;
  let fail!: (error: Error) => void;
  const promise = new Promise<T>((resolve, reject) => {
    answer = resolve;
    fail = reject;
  });
  return { promise, answer, fail };
}

describe('SharedReads', () => {
  it('gives identical questions asked while a call is in flight that call\'s answer, and asks anew once it has answered', async () => {
    const reads = new SharedReads<string>();
    const call = pendingCall<string>();
    let calls = 0;
    const read = () => {
      calls += 1;
      return call.promise;
    };
    const first = reads.read('q', read);
    const second = reads.read('q', read);
    call.answer('a');
    expect(await Promise.all([first, second])).toEqual(['a', 'a']);
    expect(calls).toBe(1);
    await reads.read('q', async () => {
      calls += 1;
      return 'b';
    });
    expect(calls).toBe(2);
  });

  it('never shares between different questions', async () => {
    const reads = new SharedReads<string>();
    const answers = await Promise.all([reads.read('q1', async () => 'one'), reads.read('q2', async () => 'two')]);
    expect(answers).toEqual(['one', 'two']);
  });

  it('starts a call of its own after a wake-up: a call begun before may have read before the commit it announces', async () => {
    const reads = new SharedReads<string>();
    const before = pendingCall<string>();
    const older = reads.read('q', () => before.promise);
    reads.woken();
    const newer = reads.read('q', async () => 'after the commit');
    before.answer('before the commit');
    expect(await older).toBe('before the commit');
    expect(await newer).toBe('after the commit');
  });

  it('gives a failure to every sharer once, then asks again', async () => {
    const reads = new SharedReads<string>();
    const call = pendingCall<string>();
    const shared = [reads.read('q', () => call.promise), reads.read('q', () => call.promise)];
    call.fail(new Error('events did not answer'));
    for (const result of await Promise.allSettled(shared)) expect(result.status).toBe('rejected');
    expect(await reads.read('q', async () => 'answered')).toBe('answered');
  });
});

describe('streams of one key at the same place', () => {
  it('read the feed once per wake-up between them, and each gets every event', async () => {
    const reads = new SharedReads<EventFeedAnswer>();
    const wakes: (() => void)[] = [];
    let feedReads = 0;
    const event = { id: 'e1', type: 'order_submission.submitted', occurredAt: '2026-11-26T12:00:00.000Z', data: {} };
    let committed = false;
    const readFeed = (input: { after: string | null }) =>
      reads.read(JSON.stringify(input), async () => {
        feedReads += 1;
        const items = committed && input.after === 'start' ? [{ cursor: 'c1', event }] : [];
        return { items, endCursor: items.at(-1)?.cursor ?? input.after ?? 'start', hasMore: false, heldBack: false, beyond: null };
      });
    const streams = Array.from({ length: 8 }, () => {
      const stream: EventStream = new EventStream({
        accountId: 'account-a',
        after: 'start',
        filter: { types: null, occurredAfter: null },
        readFeed,
        subscribeWakeups: (_, wake) => {
          wakes.push(() => {
            reads.woken();
            wake();
          });
          return () => undefined;
        },
        limits: { maxBehind: 1_000 },
        hasRoom: () => true,
      });
      return stream;
    });
    const iterators = streams.map((stream) => stream.messages());
    const firsts: Promise<IteratorResult<StreamMessage>>[] = iterators.map((iterator) => iterator.next());
    // Every stream has read once and waits for a wake-up.
    await new Promise((resolve) => setTimeout(resolve, 20));
    const readsBefore = feedReads;
    expect(readsBefore).toBe(1);
    committed = true;
    for (const wake of wakes) wake();
    const messages = await Promise.all(firsts);
    for (const { value } of messages) expect(value).toEqual({ cursor: 'c1', event });
    expect(feedReads - readsBefore).toBe(1);
    for (const iterator of iterators) await iterator.return!(undefined);
  });
});
