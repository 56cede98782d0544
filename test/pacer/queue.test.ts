import { describe, expect, it } from 'vitest';
import { perMinute, perSecond } from '../../src/core/policy.js';
import { slidingLog } from '../../src/index.js';
import type { PacerClock } from '../../src/pacer/index.js';
import type { ManualClock } from '../../src/testing/index.js';
import { flushMicrotasks, harness, outcome } from './support.js';

describe('queue mode: start times', () => {
  it('starts 12 tasks at 5/s with a burst of 5 at 0,0,0,0,0,200,400,...,1400', async () => {
    const { clock, pacer, task, startsOf } = harness({ limits: perSecond(5) });
    const results = Array.from({ length: 12 }, (_, i) => pacer.schedule(task(`t${i}`)));
    await clock.advanceAsync(2_000);
    expect(startsOf()).toEqual([0, 0, 0, 0, 0, 200, 400, 600, 800, 1000, 1200, 1400]);
    expect(await Promise.all(results)).toEqual(Array.from({ length: 12 }, (_, i) => `t${i}`));
  });

  it('does not start the sixth task at 199 ms and starts it at exactly 200 ms', async () => {
    const { clock, pacer, task, startsOf } = harness({ limits: perSecond(5) });
    for (let i = 0; i < 6; i++) pacer.schedule(task(`t${i}`));
    await clock.advanceAsync(199);
    expect(startsOf()).toHaveLength(5);
    await clock.advanceAsync(1);
    expect(startsOf()).toEqual([0, 0, 0, 0, 0, 200]);
  });

  it('starts a task at once, synchronously, when its permit exists', () => {
    const { pacer, task, startsOf } = harness({ limits: perSecond(1) });
    pacer.schedule(task('now'));
    expect(startsOf()).toEqual([0]);
  });

  it('paces each key on its own', async () => {
    const { clock, pacer, task, startsOf } = harness({ limits: perSecond(2) });
    for (let i = 0; i < 3; i++) {
      pacer.schedule(task(`a${i}`), { key: 'a' });
      pacer.schedule(task(`b${i}`), { key: 'b' });
    }
    await clock.advanceAsync(1_000);
    expect(startsOf('a')).toEqual([0, 0, 500]);
    expect(startsOf('b')).toEqual([0, 0, 500]);
  });

  it('follows a sliding log: two per second start at 0, 0, 1000, 1000, 2000', async () => {
    const { clock, pacer, task, startsOf } = harness({
      limits: perSecond(2, { algorithm: slidingLog }),
    });
    for (let i = 0; i < 5; i++) pacer.schedule(task(`t${i}`));
    await clock.advanceAsync(3_000);
    expect(startsOf()).toEqual([0, 0, 1000, 1000, 2000]);
  });

  it('waits for every policy of a key when it has several', async () => {
    const { clock, pacer, task, startsOf } = harness({ limits: [perSecond(2), perMinute(3)] });
    for (let i = 0; i < 4; i++) pacer.schedule(task(`t${i}`));
    await clock.advanceAsync(30_000);
    // The minute bucket refills one permit per 20 s, continuously: 0.025 of one was back by 500.
    expect(startsOf()).toEqual([0, 0, 500, 20_000]);
  });

  it('uses the policy a resolver picks for each key', async () => {
    const free = perSecond(1);
    const paid = perSecond(4);
    const { clock, pacer, task, startsOf } = harness({
      limits: (key) => (key.startsWith('paid') ? paid : free),
    });
    for (let i = 0; i < 3; i++) {
      pacer.schedule(task(`free${i}`), { key: 'free-user' });
      pacer.schedule(task(`paid${i}`), { key: 'paid-user' });
    }
    await clock.advanceAsync(3_000);
    expect(startsOf('free')).toEqual([0, 1000, 2000]);
    expect(startsOf('paid')).toEqual([0, 0, 0]);
  });

  it('resolves acquire() when the permit is granted', async () => {
    const { clock, pacer } = harness({ limits: perSecond(1) });
    const first = outcome(pacer.acquire());
    const second = outcome(pacer.acquire({ key: 'default' }));
    await flushMicrotasks();
    expect(first.status).toBe('resolved');
    expect(second.status).toBe('pending');
    await clock.advanceAsync(999);
    expect(second.status).toBe('pending');
    await clock.advanceAsync(1);
    expect(second.status).toBe('resolved');
  });
});

describe('queue mode: order', () => {
  it('keeps FIFO order within a key and priority', async () => {
    const { clock, pacer, task, starts } = harness({ limits: perSecond(1) });
    for (const label of ['a', 'b', 'c', 'd']) pacer.schedule(task(label));
    await clock.advanceAsync(3_000);
    expect(starts.map((start) => start.label)).toEqual(['a', 'b', 'c', 'd']);
  });

  it('starts higher priorities first among waiting tasks, FIFO within each', async () => {
    const { clock, pacer, task, starts } = harness({ limits: perSecond(1) });
    pacer.schedule(task('first'));
    pacer.schedule(task('low1'), { priority: -1 });
    pacer.schedule(task('mid1'));
    pacer.schedule(task('high1'), { priority: 5 });
    pacer.schedule(task('low2'), { priority: -1 });
    pacer.schedule(task('high2'), { priority: 5 });
    pacer.schedule(task('mid2'));
    await clock.advanceAsync(6_000);
    expect(starts.map((start) => [start.label, start.at])).toEqual([
      ['first', 0],
      ['high1', 1000],
      ['high2', 2000],
      ['mid1', 3000],
      ['mid2', 4000],
      ['low1', 5000],
      ['low2', 6000],
    ]);
  });

  it('puts a `front` task ahead of its priority, still behind higher priorities', async () => {
    const { clock, pacer, task, starts } = harness({ limits: perSecond(1) });
    pacer.schedule(task('first'));
    pacer.schedule(task('a'));
    pacer.schedule(task('b'));
    pacer.schedule(task('urgent'), { priority: 1 });
    pacer.schedule(task('retry'), { front: true });
    await clock.advanceAsync(4_000);
    expect(starts.map((start) => start.label)).toEqual(['first', 'urgent', 'retry', 'a', 'b']);
  });

  it('does not let small tasks overtake a big one at the head of the line', async () => {
    const { clock, pacer, task, starts } = harness({ limits: perSecond(5) });
    for (let i = 0; i < 5; i++) pacer.schedule(task(`burst${i}`));
    pacer.schedule(task('big'), { cost: 5 });
    for (let i = 0; i < 3; i++) pacer.schedule(task(`small${i}`));
    // At 200 ms one permit exists; a small task could run, but the big one is first in line.
    await clock.advanceAsync(2_000);
    expect(starts.slice(5).map((start) => [start.label, start.at])).toEqual([
      ['big', 1000],
      ['small0', 1200],
      ['small1', 1400],
      ['small2', 1600],
    ]);
  });

  it('lets a task scheduled from inside a task join the line', async () => {
    const { clock, pacer, task, startsOf } = harness({ limits: perSecond(2) });
    const nested: Promise<string>[] = [];
    pacer.schedule(() => {
      nested.push(pacer.schedule(task('inner0')), pacer.schedule(task('inner1')));
      return 'outer';
    });
    await clock.advanceAsync(1_000);
    expect(startsOf('inner')).toEqual([0, 500]);
    expect(await Promise.all(nested)).toEqual(['inner0', 'inner1']);
  });
});

describe('queue mode: the one timer', () => {
  /** The manual clock, counting setTimeout calls and the most timers pending at once. */
  function countingClock(clock: ManualClock) {
    const stats = { set: 0, maxPending: 0 };
    const wrapped: PacerClock = {
      now: clock.now,
      setTimeout: (callback, ms) => {
        stats.set++;
        const handle = clock.setTimeout(callback, ms);
        stats.maxPending = Math.max(stats.maxPending, clock.pendingTimers);
        return handle;
      },
      clearTimeout: (handle) => clock.clearTimeout(handle as number),
    };
    return { stats, wrapped };
  }

  it('keeps one timer for 1,000 keys waiting, and starts each at its own time', async () => {
    let counting: ReturnType<typeof countingClock> | undefined;
    const { clock, pacer, task, starts } = harness(
      // Key i refills one permit every 100 + i ms: 1,000 distinct due times.
      { limits: (key) => ({ limit: 1, windowMs: 100 + Number(key) }) },
      (manual) => {
        counting = countingClock(manual);
        return counting.wrapped;
      },
    );
    const stats = (counting as ReturnType<typeof countingClock>).stats;
    for (let i = 0; i < 1_000; i++) {
      pacer.schedule(task(`${i}:first`), { key: String(i) });
      pacer.schedule(task(`${i}:second`), { key: String(i) });
    }
    expect(pacer.getSnapshot().queued).toBe(1_000);
    expect(clock.pendingTimers).toBe(1);
    // Tasks are synchronous and start inside the timer callback: no promise needs to run.
    clock.advance(1_100);
    expect(stats.maxPending).toBe(1);
    expect(clock.pendingTimers).toBe(0);
    for (const { label, at } of starts) {
      const [key, which] = label.split(':');
      expect(at).toBe(which === 'first' ? 0 : 100 + Number(key));
    }
    expect(starts).toHaveLength(2_000);
  });

  it('does not re-arm the timer when tasks join behind the head', () => {
    let counting: ReturnType<typeof countingClock> | undefined;
    const { pacer, task } = harness({ limits: perSecond(1) }, (manual) => {
      counting = countingClock(manual);
      return counting.wrapped;
    });
    for (let i = 0; i < 20; i++) pacer.schedule(task(`t${i}`));
    expect(counting?.stats.set).toBe(1);
  });

  it('starts every task that is due when the timer fires late', async () => {
    // Timers that fire a full second late, as a throttled background tab may.
    const { clock, pacer, task, startsOf } = harness({ limits: perSecond(5) }, (manual) => ({
      now: manual.now,
      setTimeout: (callback, ms) => manual.setTimeout(callback, ms + 1_000),
      clearTimeout: (handle) => manual.clearTimeout(handle as number),
    }));
    for (let i = 0; i < 12; i++) pacer.schedule(task(`t${i}`));
    await clock.advanceAsync(1_200);
    // Due at 200, fired at 1200: the bucket is full again, so five start at that one firing.
    expect(startsOf()).toEqual([0, 0, 0, 0, 0, 1200, 1200, 1200, 1200, 1200]);
  });

  it('never starts a task early when the timer fires early, and re-arms instead', async () => {
    // Timers that fire 1 ms early, as Node's may against performance.now().
    let fired = 0;
    const { clock, pacer, task, startsOf } = harness({ limits: perSecond(5) }, (manual) => ({
      now: manual.now,
      setTimeout: (callback, ms) =>
        manual.setTimeout(
          () => {
            fired++;
            callback();
          },
          ms > 1 ? ms - 1 : ms,
        ),
      clearTimeout: (handle) => manual.clearTimeout(handle as number),
    }));
    for (let i = 0; i < 8; i++) pacer.schedule(task(`t${i}`));
    await clock.advanceAsync(1_000);
    expect(startsOf()).toEqual([0, 0, 0, 0, 0, 200, 400, 600]);
    // Each start took an early firing (199) and the re-armed one (200).
    expect(fired).toBe(6);
  });
});

describe('queue mode: maxKeys', () => {
  it('holds a new key until an idle key can be dropped, then starts it', async () => {
    const { clock, pacer, task, startsOf } = harness({ limits: perSecond(2), maxKeys: 1 });
    pacer.schedule(task('a'), { key: 'a' });
    pacer.schedule(task('b'), { key: 'b' });
    pacer.schedule(task('c'), { key: 'c' });
    expect(startsOf()).toEqual([0]);
    // Key a is busy until its bucket is full again at 500; then b gets its room, and c waits
    // for b's bucket to refill in turn.
    await clock.advanceAsync(2_000);
    expect(startsOf('b')).toEqual([500]);
    expect(startsOf('c')).toEqual([1000]);
  });
});

describe('queue mode: costs and results', () => {
  it('rejects (does not throw) a task whose cost exceeds the capacity', async () => {
    const { pacer } = harness({ limits: perSecond(5) });
    let promise: Promise<unknown> | undefined;
    expect(() => {
      promise = pacer.schedule(() => 'never', { cost: 6 });
    }).not.toThrow();
    await expect(promise).rejects.toThrow(RangeError);
    await expect(promise).rejects.toThrow(/cost of 6 can never be allowed/);
    expect(pacer.getSnapshot().queued).toBe(0);
  });

  it('takes `cost` permits for a weighted task', async () => {
    const { clock, pacer, task, startsOf } = harness({ limits: perSecond(5) });
    pacer.schedule(task('heavy'), { cost: 4 });
    pacer.schedule(task('two'), { cost: 2 });
    await clock.advanceAsync(1_000);
    expect(startsOf()).toEqual([0, 200]);
  });

  it('resolves with what the task returns, sync or async, and rejects with what it throws', async () => {
    const { pacer } = harness({ limits: perSecond(10) });
    const boom = new Error('boom');
    await expect(pacer.schedule(() => 42)).resolves.toBe(42);
    await expect(pacer.schedule(async () => 'async')).resolves.toBe('async');
    await expect(
      pacer.schedule(() => {
        throw boom;
      }),
    ).rejects.toBe(boom);
    await expect(pacer.schedule(() => Promise.reject(boom))).rejects.toBe(boom);
    expect(pacer.getSnapshot()).toMatchObject({ inFlight: 0, queued: 0, admitted: 4 });
  });

  it('keeps pacing after a task throws synchronously', async () => {
    const { clock, pacer, task, startsOf } = harness({ limits: perSecond(1) });
    const failed = pacer.schedule(() => {
      throw new Error('sync');
    });
    const next = pacer.schedule(task('next'));
    await expect(failed).rejects.toThrow('sync');
    await clock.advanceAsync(1_000);
    await expect(next).resolves.toBe('next');
    expect(startsOf()).toEqual([1000]);
  });
});
