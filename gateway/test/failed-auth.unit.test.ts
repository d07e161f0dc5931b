import { describe, expect, it } from 'vitest';
import { KeyLookupSlots } from '../src/failed-auth.ts';

/** A waiter that never gives up; each its own signal, as each request has. */
const never = () => new AbortController().signal;
const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('key look-up slots', () => {
  it('never hold more than their capacity', async () => {
    const slots = new KeyLookupSlots(2);
    const granted: number[] = [];
    for (let i = 0; i < 5; i += 1) void slots.acquire('10.0.0.1', never()).then(() => granted.push(i));
    await settle();
    expect(granted).toEqual([0, 1]);
    slots.release();
    await settle();
    expect(granted).toEqual([0, 1, 2]);
  });

  it('take addresses in turn: a flood from one address delays another address by one round at most', async () => {
    const slots = new KeyLookupSlots(1);
    await slots.acquire('guesser', never());
    const order: string[] = [];
    for (let i = 0; i < 100; i += 1) void slots.acquire('guesser', never()).then(() => order.push('guesser'));
    void slots.acquire('client', never()).then(() => order.push('client'));
    for (let i = 0; i < 3; i += 1) {
      slots.release();
      await settle();
    }
    expect(order).toEqual(['guesser', 'client', 'guesser']);
  });

  it('let a waiter that gave up leave the queue without taking a slot', async () => {
    const slots = new KeyLookupSlots(1);
    await slots.acquire('a', never());
    const leaving = new AbortController();
    const gaveUp = slots.acquire('a', leaving.signal);
    let laterGranted = false;
    void slots.acquire('b', never()).then(() => (laterGranted = true));
    leaving.abort();
    expect(await gaveUp).toBe(false);
    slots.release();
    await settle();
    expect(laterGranted).toBe(true);
  });
});
