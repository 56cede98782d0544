import { describe, expect, it, vi } from 'vitest';
import { perSecond } from '../../src/core/policy.js';
import { harness } from './support.js';

describe('blockUntil', () => {
  it('holds every queued task of the key until t, then starts them at t exactly', async () => {
    const { clock, pacer, task, startsOf } = harness({ limits: perSecond(5) });
    pacer.blockUntil('api', 3_000);
    for (let i = 0; i < 3; i++) pacer.schedule(task(`api${i}`), { key: 'api' });
    pacer.schedule(task('other'), { key: 'other' });
    expect(startsOf('other')).toEqual([0]);
    await clock.advanceAsync(2_999);
    expect(startsOf('api')).toEqual([]);
    expect(pacer.getSnapshot().queued).toBe(3);
    await clock.advanceAsync(1);
    expect(startsOf('api')).toEqual([3000, 3000, 3000]);
  });

  it('moves tasks already waiting on the rate to the end of the block, dropping none', async () => {
    const { clock, pacer, task, startsOf } = harness({ limits: perSecond(5) });
    for (let i = 0; i < 7; i++) pacer.schedule(task(`t${i}`));
    await clock.advanceAsync(100);
    pacer.blockUntil('default', 1_000);
    expect(pacer.inspect()).toMatchObject({ blockedUntil: 1_000, nextStartAt: 1_000 });
    await clock.advanceAsync(2_000);
    // Two were due at 200 and 400; the block held both, and by 1000 the bucket had refilled.
    expect(startsOf().slice(5)).toEqual([1000, 1000]);
  });

  it('starts the tasks of a key whose block the limiter dropped for maxKeys, as it would a new one', async () => {
    // At `maxKeys` blocks, a new block drops the one that ends first: the queue follows the
    // limiter, as the fast path does, rather than waiting for a block nobody keeps any more.
    const { clock, pacer, task, startsOf } = harness({ limits: perSecond(5), maxKeys: 2 });
    pacer.blockUntil('c', 100);
    pacer.schedule(task('c'), { key: 'c' });
    pacer.blockUntil('b', 100);
    expect(startsOf('c')).toEqual([]);
    pacer.blockUntil('a', 200); // drops c's block, the first to end
    expect(pacer.inspect('c').blockedUntil).toBeUndefined();
    expect(startsOf('c')).toEqual([0]);
    await clock.advanceAsync(1_000);
    expect(startsOf('c')).toEqual([0]);
  });

  it('leaves the rate in charge when the block ends before the next permit', async () => {
    const { clock, pacer, task, startsOf } = harness({ limits: perSecond(1) });
    pacer.schedule(task('first'));
    pacer.schedule(task('second'));
    pacer.blockUntil('default', 300);
    await clock.advanceAsync(2_000);
    expect(startsOf()).toEqual([0, 1000]);
  });

  it('accepts a block set while the pacer is paused and honours it on resume', async () => {
    const { clock, pacer, task, startsOf } = harness({ limits: perSecond(5) });
    pacer.pause();
    pacer.schedule(task('t'));
    pacer.blockUntil('default', 500);
    await clock.advanceAsync(100);
    pacer.resume();
    await clock.advanceAsync(1_000);
    expect(startsOf()).toEqual([500]);
  });
});

describe('a block beyond the range of setTimeout', () => {
  it('is armed in steps of at most 2^31 - 1 ms and still releases the task at t', () => {
    const delays: number[] = [];
    const { clock, pacer, task, startsOf } = harness({ limits: perSecond(5) }, (manual) => ({
      now: manual.now,
      setTimeout: (callback, ms) => {
        delays.push(ms);
        return manual.setTimeout(callback, ms);
      },
      clearTimeout: (handle) => manual.clearTimeout(handle as number),
    }));
    const thirtyDays = 30 * 86_400_000;
    pacer.blockUntil('default', thirtyDays);
    pacer.schedule(task('t'));
    clock.advance(thirtyDays);
    expect(startsOf()).toEqual([thirtyDays]);
    expect(delays).toEqual([2_147_483_647, thirtyDays - 2_147_483_647]);
  });
});

describe('observe', () => {
  it('lowers local credit to what the server says is left', async () => {
    const { clock, pacer, task, startsOf } = harness({ limits: perSecond(5) });
    pacer.observe('default', { kind: 'quota', remaining: 1 });
    for (let i = 0; i < 3; i++) pacer.schedule(task(`t${i}`));
    await clock.advanceAsync(1_000);
    expect(startsOf()).toEqual([0, 200, 400]);
  });

  it('re-times tasks already waiting when credit falls', async () => {
    const { clock, pacer, task, startsOf } = harness({ limits: perSecond(2) });
    pacer.schedule(task('first'));
    pacer.schedule(task('second'));
    pacer.schedule(task('third'));
    // One permit was left for 'second'... until the server says none is.
    expect(startsOf()).toEqual([0, 0]);
    pacer.observe('default', { kind: 'quota', remaining: 0 });
    await clock.advanceAsync(1_000);
    expect(startsOf()).toEqual([0, 0, 500]);
  });

  it('never raises credit', async () => {
    const { clock, pacer, task, startsOf } = harness({ limits: perSecond(5) });
    for (let i = 0; i < 6; i++) pacer.schedule(task(`t${i}`));
    pacer.observe('default', { kind: 'quota', remaining: 100 });
    await clock.advanceAsync(1_000);
    expect(startsOf()).toEqual([0, 0, 0, 0, 0, 200]);
  });

  it('blocks the key for resetMs when nothing remains, and lists it as blocked', async () => {
    const { clock, pacer, task, startsOf } = harness({ limits: perSecond(5) });
    pacer.observe('api', { kind: 'quota', remaining: 0, resetMs: 750 });
    expect(pacer.getSnapshot().blockedKeys).toEqual(['api']);
    pacer.schedule(task('t'), { key: 'api' });
    await clock.advanceAsync(1_000);
    expect(startsOf()).toEqual([750]);
    expect(pacer.getSnapshot().blockedKeys).toEqual([]);
  });
});

describe('blocked keys in the snapshot', () => {
  it('lists blocked keys sorted and tells listeners when a block ends', () => {
    const { clock, pacer } = harness({ limits: perSecond(5) });
    const listener = vi.fn();
    pacer.subscribe(listener);
    pacer.blockUntil('zeta', 200);
    pacer.blockUntil('alpha', 100);
    expect(pacer.getSnapshot().blockedKeys).toEqual(['alpha', 'zeta']);
    expect(listener).toHaveBeenCalledTimes(2);
    clock.advance(100);
    expect(listener).toHaveBeenCalledTimes(3);
    expect(pacer.getSnapshot().blockedKeys).toEqual(['zeta']);
    clock.advance(100);
    expect(pacer.getSnapshot().blockedKeys).toEqual([]);
    expect(listener).toHaveBeenCalledTimes(4);
    expect(clock.pendingTimers).toBe(0);
  });

  it('does not hold a Node process open for a block with no task waiting', () => {
    const { pacer } = harness({ limits: perSecond(1) }, (manual) => ({
      now: manual.now,
      setTimeout: (callback, ms) => Object.assign(handle, { id: manual.setTimeout(callback, ms) }),
      clearTimeout: (timer) => manual.clearTimeout((timer as typeof handle).id),
    }));
    const handle = { id: 0, ref: vi.fn(), unref: vi.fn() };
    pacer.blockUntil('api', 1_000);
    expect(handle.unref).toHaveBeenCalledTimes(1);
    // A task now waits for the key: that is work, which keeps the process alive.
    pacer.schedule(() => 1, { key: 'api' });
    expect(handle.ref).toHaveBeenCalledTimes(1);
  });
});
