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

  describe('with jitter', () => {
    it('reads a little ahead of the set time, further with each reading, never back', () => {
      const clock = createManualClock({ start: 100, jitter: 0.05 });
      const readings = Array.from({ length: 50 }, () => clock.now());
      for (const [i, reading] of readings.entries()) {
        expect(reading).toBeGreaterThanOrEqual(100);
        expect(reading).toBeLessThanOrEqual(100.05);
        if (i > 0) expect(reading).toBeGreaterThanOrEqual(readings[i - 1] as number);
      }
      // Two readings in a row differ, as on a real clock: code cannot count on equal readings.
      expect(new Set(readings.slice(0, 5)).size).toBe(5);
    });

    it('starts its noise again when time moves, and fires timers at the set time', () => {
      const clock = createManualClock({ jitter: 0.5 });
      for (let i = 0; i < 20; i++) clock.now();
      const fired: number[] = [];
      clock.setTimeout(() => fired.push(clock.now()), 10);
      clock.advance(10);
      expect(fired[0]).toBeGreaterThanOrEqual(10);
      expect(fired[0]).toBeLessThan(10.5);
      clock.advance(1_000);
      expect(clock.now()).toBeLessThan(1_010.5);
      clock.set(5); // backwards: readings follow
      expect(clock.now()).toBeLessThan(5.5);
    });

    it('repeats its noise for the same seed', () => {
      const read = (seed: number) => {
        const clock = createManualClock({ jitter: 0.1, seed });
        return Array.from({ length: 10 }, () => clock.now());
      };
      expect(read(7)).toEqual(read(7));
      expect(read(7)).not.toEqual(read(8));
    });

    it('rejects a negative or non-finite jitter and a fractional seed, naming the field', () => {
      expect(() => createManualClock({ jitter: -1 })).toThrow(
        /Expected `jitter` to be a finite number >= 0 \(ms\), got `-1`/,
      );
      expect(() => createManualClock({ jitter: Number.POSITIVE_INFINITY })).toThrow(RangeError);
      expect(() => createManualClock({ jitter: '1' as unknown as number })).toThrow(TypeError);
      expect(() => createManualClock({ seed: 1.5 })).toThrow(/`seed` to be an integer/);
    });
  });
});
