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

  it('take an IPv6 client by its /64: a flood from many of its addresses delays another client by one round at most', async () => {
    const slots = new KeyLookupSlots(1);
    await slots.acquire('2001:db8:1:1::1', never());
    const order: string[] = [];
    for (let i = 0; i < 100; i += 1) void slots.acquire(`2001:db8:1:1::${(i + 2).toString(16)}`, never()).then(() => order.push('guesser'));
    void slots.acquire('2001:db8:2:2::1', never()).then(() => order.push('client'));
    for (let i = 0; i < 2; i += 1) {
      slots.release();
      await settle();
    }
    expect(order).toEqual(['guesser', 'client']);
  });

  it('take the addresses of one /64 in turn: a neighbour of a flooding address waits one round of them', async () => {
    const slots = new KeyLookupSlots(1);
    await slots.acquire('2001:db8:1:1::a', never());
    const order: string[] = [];
    for (let i = 0; i < 50; i += 1) {
      void slots.acquire('2001:db8:1:1::a', never()).then(() => order.push('a'));
      void slots.acquire('2001:db8:1:1::b', never()).then(() => order.push('b'));
    }
    void slots.acquire('2001:db8:2:2::1', never()).then(() => order.push('client'));
    void slots.acquire('2001:db8:1:1:ffff::1', never()).then(() => order.push('neighbour'));
    for (let i = 0; i < 5; i += 1) {
      slots.release();
      await settle();
    }
    expect(order).toEqual(['a', 'client', 'b', 'neighbour', 'a']);
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
