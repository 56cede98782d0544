import { describe, expect, it } from 'vitest';
import { createManualClock } from '../../src/testing/index.js';

describe('ManualClock', () => {
  it('starts where it is told and moves only when advanced or set', () => {
    const clock = createManualClock({ start: 1000 });
    expect(clock.now()).toBe(1000);
    clock.advance(250);
    expect(clock.now()).toBe(1250);
    clock.set(5000);
    expect(clock.now()).toBe(5000);
    clock.set(10);
    expect(clock.now()).toBe(10);
  });

  it('fires timers in due order, each with the clock at its due time', () => {
    const clock = createManualClock();
    const fired: Array<[string, number]> = [];
    clock.setTimeout(() => fired.push(['b', clock.now()]), 200);
    clock.setTimeout(() => fired.push(['a', clock.now()]), 100);
    clock.setTimeout(() => fired.push(['c', clock.now()]), 200);
    clock.setTimeout(() => fired.push(['late', clock.now()]), 500);
    clock.advance(300);
    expect(fired).toEqual([
      ['a', 100],
      ['b', 200],
      ['c', 200],
    ]);
    expect(clock.now()).toBe(300);
    expect(clock.pendingTimers).toBe(1);
  });

  it('fires timers that callbacks set within the span, and not cleared ones', () => {
    const clock = createManualClock();
    const fired: number[] = [];
    const cleared = clock.setTimeout(() => fired.push(-1), 50);
    clock.setTimeout(() => {
      fired.push(clock.now());
      clock.setTimeout(() => fired.push(clock.now()), 30);
    }, 100);
    clock.clearTimeout(cleared);
    clock.advance(130);
    expect(fired).toEqual([100, 130]);
    expect(clock.pendingTimers).toBe(0);
  });

  it('fires nothing when set backwards', () => {
    const clock = createManualClock({ start: 100 });
    const fired: number[] = [];
    clock.setTimeout(() => fired.push(clock.now()), 10);
    clock.set(50);
    expect(fired).toEqual([]);
    clock.set(110);
    expect(fired).toEqual([110]);
  });

  it('lets promise callbacks run between timers when advanced asynchronously', async () => {
    const clock = createManualClock();
    const order: string[] = [];
    clock.setTimeout(() => {
      order.push(`timer@${clock.now()}`);
      void Promise.resolve().then(() => {
        order.push(`then@${clock.now()}`);
        clock.setTimeout(() => order.push(`chained@${clock.now()}`), 10);
      });
    }, 100);
    await clock.advanceAsync(200);
    expect(order).toEqual(['timer@100', 'then@100', 'chained@110']);
    expect(clock.now()).toBe(200);
  });

  it('runs every pending timer on runAll and refuses a timer loop', () => {
    const clock = createManualClock();
    clock.setTimeout(() => {}, 10);
    clock.setTimeout(() => {}, 1000);
    expect(clock.runAll()).toBe(2);
    expect(clock.now()).toBe(1000);
    const loop = () => clock.setTimeout(loop, 1);
    loop();
    expect(() => clock.runAll(50)).toThrow(/timer loop/);
  });

  it('rejects a negative or non-finite advance', () => {
    const clock = createManualClock();
    expect(() => clock.advance(-1)).toThrow(RangeError);
    expect(() => clock.advance(Number.NaN)).toThrow(/`ms`/);
    expect(() => createManualClock({ start: Number.NaN })).toThrow(/`start`/);
  });
});
