import { describe, expect, it } from 'vitest';
import { perSecond } from '../../src/core/policy.js';
import { isRateLimitError, RateLimitError } from '../../src/pacer/index.js';
import { flushMicrotasks, gate, harness, outcome } from './support.js';

describe('reject mode', () => {
  it('rejects the sixth task at once with a RateLimitError saying to retry in 200 ms', async () => {
    const { clock, pacer, task, startsOf } = harness({ limits: perSecond(5), mode: 'reject' });
    const allowed = Array.from({ length: 5 }, (_, i) => pacer.schedule(task(`t${i}`)));
    const denied = pacer.schedule(task('sixth'));
    const error: unknown = await denied.catch((reason: unknown) => reason);
    expect(error).toBeInstanceOf(RateLimitError);
    expect(error).toMatchObject({
      name: 'RateLimitError',
      key: 'default',
      retryAfterMs: 200,
      maxWaitMs: undefined,
      decision: { allowed: false, reason: 'rate', retryAfterMs: 200, remaining: 0, limit: 5 },
    });
    await expect(Promise.all(allowed)).resolves.toHaveLength(5);
    expect(startsOf()).toEqual([0, 0, 0, 0, 0]);
    expect(pacer.getSnapshot()).toMatchObject({ queued: 0, admitted: 5, denied: 1 });
    expect(clock.pendingTimers).toBe(0);
  });

  it('allows the task again once the permit is back', async () => {
    const { clock, pacer } = harness({ limits: perSecond(1), mode: 'reject' });
    await pacer.schedule(() => 'first');
    await expect(pacer.schedule(() => 'early')).rejects.toSatisfy(isRateLimitError);
    clock.advance(999);
    await expect(pacer.schedule(() => 'still early')).rejects.toMatchObject({ retryAfterMs: 1 });
    clock.advance(1);
    await expect(pacer.schedule(() => 'on time')).resolves.toBe('on time');
  });

  it("says 'blocked' while the server blocks the key", async () => {
    const { pacer } = harness({ limits: perSecond(5), mode: 'reject' });
    pacer.blockUntil('api', 3_000);
    await expect(pacer.schedule(() => 1, { key: 'api' })).rejects.toMatchObject({
      retryAfterMs: 3_000,
      decision: { reason: 'blocked' },
    });
    await expect(pacer.schedule(() => 1, { key: 'other' })).resolves.toBe(1);
  });

  it("says 'key-limit' when maxKeys busy keys leave no room", async () => {
    const { pacer } = harness({ limits: perSecond(1), mode: 'reject', maxKeys: 1 });
    await pacer.schedule(() => 1, { key: 'a' });
    await expect(pacer.schedule(() => 1, { key: 'b' })).rejects.toMatchObject({
      decision: { reason: 'key-limit' },
    });
  });

  it('lets a task wait for a concurrency slot and decides its rate when the slot frees', async () => {
    const { pacer } = harness({ limits: perSecond(2), mode: 'reject', concurrency: 1 });
    const running = gate<string>();
    const first = pacer.schedule(() => running.promise);
    // Both fit the rate now, but only one slot exists: they wait, holding no permit.
    const second = outcome(pacer.schedule(() => 'second'));
    const third = outcome(pacer.schedule(() => 'third'));
    expect(pacer.getSnapshot()).toMatchObject({ queued: 2, inFlight: 1 });
    expect(pacer.inspect().level).toBe(1);
    running.open('first');
    await expect(first).resolves.toBe('first');
    await flushMicrotasks();
    // The second takes the last permit; the third finds none at its turn.
    expect(second).toMatchObject({ status: 'resolved', value: 'second' });
    expect(third.status).toBe('rejected');
    expect(third.reason).toBeInstanceOf(RateLimitError);
  });
});

describe('tryAcquire', () => {
  it('takes the permit when allowed and denies without taking one', () => {
    const { pacer } = harness({ limits: perSecond(2) });
    expect(pacer.tryAcquire()).toMatchObject({ allowed: true, remaining: 1 });
    expect(pacer.tryAcquire('default', 1)).toMatchObject({ allowed: true, remaining: 0 });
    expect(pacer.tryAcquire()).toMatchObject({ allowed: false, reason: 'rate', retryAfterMs: 500 });
    expect(pacer.getSnapshot()).toMatchObject({ admitted: 2, denied: 1, queued: 0 });
  });

  it('never jumps ahead of tasks waiting on the same key', async () => {
    const { clock, pacer, task, startsOf } = harness({ limits: perSecond(5) });
    for (let i = 0; i < 5; i++) pacer.schedule(task(`burst${i}`));
    pacer.schedule(task('big'), { cost: 5 });
    // At 200 ms one permit exists, but the big task is first in line for it.
    clock.advance(200);
    const decision = pacer.tryAcquire('default', 1);
    // Behind the big task: 5 permits (800 ms more) plus its own (200 ms).
    expect(decision).toMatchObject({ allowed: false, reason: 'rate', retryAfterMs: 1000 });
    await clock.advanceAsync(800);
    expect(startsOf('big')).toEqual([1000]);
  });

  it('is not held back by tasks of other keys', () => {
    const { pacer } = harness({ limits: perSecond(1) });
    pacer.schedule(() => 1, { key: 'a' });
    pacer.schedule(() => 2, { key: 'a' });
    expect(pacer.tryAcquire('b')).toMatchObject({ allowed: true });
  });

  it('throws, like the core, for a cost that can never fit', () => {
    const { pacer } = harness({ limits: perSecond(2) });
    expect(() => pacer.tryAcquire('default', 3)).toThrow(RangeError);
    pacer.schedule(() => 1);
    pacer.schedule(() => 1);
    pacer.schedule(() => 1);
    expect(() => pacer.tryAcquire('default', 3)).toThrow(RangeError);
  });
});
