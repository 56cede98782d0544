import { describe, expect, it } from 'vitest';
import { perSecond } from '../../src/core/policy.js';
import { createPacer } from '../../src/pacer/index.js';
import { createManualClock } from '../../src/testing/index.js';
import { fakeStore } from '../support/fake-store.js';
import { flushMicrotasks, gate, harness, outcome, trackListeners } from './support.js';

/** A result whose `then` getter throws: `await` of it rejects with that error. */
function throwingThen(error: Error): object {
  return Object.defineProperty({}, 'then', {
    get() {
      throw error;
    },
  });
}

/** A revoked Proxy: reading any property of it (its `then` too) throws a TypeError. */
function revokedProxy(): object {
  const { proxy, revoke } = Proxy.revocable({}, {});
  revoke();
  return proxy;
}

describe('a task whose result cannot be read', () => {
  it('rejects on the fast path with the getter error and frees its slot', async () => {
    const { pacer, task, startsOf } = harness({ limits: perSecond(10), concurrency: 1 });
    const boom = new Error('then getter');
    const first = outcome(pacer.schedule(() => throwingThen(boom)));
    await flushMicrotasks();
    expect(first).toMatchObject({ status: 'rejected', reason: boom });
    expect(pacer.getSnapshot().inFlight).toBe(0);
    await pacer.schedule(task('next'));
    expect(startsOf()).toEqual([0]);
  });

  it('rejects a revoked Proxy on the fast path and frees its slot', async () => {
    const { pacer } = harness({ limits: perSecond(10), concurrency: 1 });
    await expect(pacer.schedule(() => revokedProxy())).rejects.toBeInstanceOf(TypeError);
    expect(pacer.getSnapshot().inFlight).toBe(0);
    await expect(pacer.schedule(() => 'after')).resolves.toBe('after');
  });

  it('rejects on the queued path from the timer without throwing out of it', async () => {
    const { clock, pacer, task, startsOf } = harness({ limits: perSecond(1), concurrency: 1 });
    const boom = new Error('then getter');
    pacer.schedule(task('first'));
    const queued = outcome(pacer.schedule(() => throwingThen(boom)));
    const proxy = outcome(pacer.schedule(() => revokedProxy()));
    pacer.schedule(task('last'));
    // The timer callback runs inside advanceAsync: an escaping error would reject it.
    await clock.advanceAsync(3_000);
    expect(queued).toMatchObject({ status: 'rejected', reason: boom });
    expect(proxy.status).toBe('rejected');
    expect(proxy.reason).toBeInstanceOf(TypeError);
    expect(startsOf()).toEqual([0, 3_000]);
    expect(pacer.getSnapshot()).toMatchObject({ inFlight: 0, queued: 0 });
  });
});

describe('a clock that returns NaN or Infinity', () => {
  /** The manual clock, with readings the test replaces; throws if read in a runaway loop. */
  function badClock(readings: number[]) {
    const clock = createManualClock();
    let reads = 0;
    return {
      clock,
      pacerClock: {
        now: () => {
          if (++reads > 10_000) throw new Error('the clock was read in a loop');
          return readings.length > 0 ? (readings.shift() as number) : clock.now();
        },
        setTimeout: clock.setTimeout.bind(clock),
        clearTimeout: clock.clearTimeout.bind(clock),
      },
    };
  }

  for (const bad of [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY]) {
    it(`ignores a reading of ${bad} and keeps pacing on the last good time`, async () => {
      const { clock, pacerClock } = badClock([]);
      const pacer = createPacer({ limits: perSecond(1), clock: pacerClock });
      const starts: number[] = [];
      const run = () => starts.push(clock.now());
      await pacer.schedule(run);
      await clock.advanceAsync(500);
      expect(pacer.now()).toBe(500); // the last good reading
      // Every reading bad from here until the clock is read 20 times.
      const original = pacerClock.now;
      let bads = 20;
      pacerClock.now = () => (bads-- > 0 ? bad : original());
      const queued = outcome(pacer.schedule(run));
      const again = outcome(pacer.schedule(run));
      pacerClock.now = original;
      await clock.advanceAsync(2_000);
      expect(queued.status).toBe('resolved');
      expect(again.status).toBe('resolved');
      expect(starts).toEqual([0, 1_000, 2_000]);
    });
  }

  it('ignores a bad first reading', async () => {
    const { clock, pacerClock } = badClock([Number.NaN, Number.POSITIVE_INFINITY]);
    const pacer = createPacer({ limits: perSecond(1), clock: pacerClock });
    const starts: number[] = [];
    const run = () => starts.push(clock.now());
    for (let i = 0; i < 3; i++) pacer.schedule(run);
    await clock.advanceAsync(2_000);
    expect(starts).toEqual([0, 1_000, 2_000]);
  });
});

describe('concurrency with a store', () => {
  it('is never exceeded when a granted task of a batch finishes synchronously', async () => {
    const clock = createManualClock();
    const fake = fakeStore({ now: () => clock.now() });
    const pacer = createPacer({
      limits: perSecond(100),
      store: fake.store,
      concurrency: 2,
      clock,
    });
    let running = 0;
    let most = 0;
    const gates = Array.from({ length: 6 }, () => gate());
    const enter = () => {
      running++;
      most = Math.max(most, running);
    };
    // The first is asked for alone; the second, over when it returns, heads the next batch of
    // two: its flush must not claim the slot of the third, which has not started yet.
    const settled = gates.map((g, index) =>
      pacer.schedule(() => {
        enter();
        if (index < 2) {
          running--;
          return index;
        }
        return g.promise.then(() => {
          running--;
          return index;
        });
      }),
    );
    for (let round = 0; round < 6; round++) {
      await flushMicrotasks();
      await clock.advanceAsync(10);
      for (const g of gates) g.open();
    }
    await Promise.all(settled);
    expect(most).toBeLessThanOrEqual(2);
  });
});

describe('many queued tasks sharing one AbortSignal', () => {
  it('add one abort listener for the signal, and abort together', async () => {
    const { pacer } = harness({ limits: perSecond(1) });
    const controller = new AbortController();
    const listeners = trackListeners(controller.signal);
    const tasks = Array.from({ length: 50 }, () =>
      outcome(pacer.schedule(() => 'x', { signal: controller.signal })),
    );
    await flushMicrotasks();
    expect(listeners.live).toBeLessThanOrEqual(1);
    controller.abort(new Error('stop'));
    await flushMicrotasks();
    // The first started at once; every other one rejected with the reason.
    expect(tasks.filter((t) => t.status === 'rejected')).toHaveLength(49);
    expect(pacer.getSnapshot().queued).toBe(0);
    expect(listeners.live).toBe(0);
  });

  it('removes the listener once the last task of the signal leaves the queue', async () => {
    const { clock, pacer } = harness({ limits: perSecond(1) });
    const controller = new AbortController();
    const listeners = trackListeners(controller.signal);
    for (let i = 0; i < 5; i++) pacer.schedule(() => i, { signal: controller.signal });
    expect(listeners.live).toBe(1);
    await clock.advanceAsync(4_000);
    expect(listeners.live).toBe(0);
    expect(listeners.added).toBe(1);
  });
});

describe('server blocks', () => {
  it('are bounded by maxKeys: the block that ends first makes room', () => {
    const { clock, pacer } = harness({ limits: perSecond(1), maxKeys: 3 });
    for (let i = 0; i < 10; i++) pacer.blockUntil(`k${i}`, clock.now() + 1_000 + i);
    expect(pacer.getSnapshot().blockedKeys).toEqual(['k7', 'k8', 'k9']);
    expect(pacer.inspect('k9').blockedUntil).toBe(1_009);
    expect(pacer.inspect('k0').blockedUntil).toBeUndefined();
  });

  it('list the blocked keys sorted, and drop each as it ends', async () => {
    const { clock, pacer } = harness({ limits: perSecond(1) });
    pacer.blockUntil('b', 300);
    pacer.blockUntil('c', 100);
    pacer.blockUntil('a', 200);
    expect(pacer.getSnapshot().blockedKeys).toEqual(['a', 'b', 'c']);
    await clock.advanceAsync(150);
    expect(pacer.getSnapshot().blockedKeys).toEqual(['a', 'b']);
    await clock.advanceAsync(100);
    expect(pacer.getSnapshot().blockedKeys).toEqual(['b']);
  });
});
