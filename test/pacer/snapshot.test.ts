import { afterEach, describe, expect, it, vi } from 'vitest';
import { perSecond } from '../../src/core/policy.js';
import { flushMicrotasks, gate, harness } from './support.js';

afterEach(() => {
  vi.unstubAllGlobals();
  vi.restoreAllMocks();
});

describe('getSnapshot', () => {
  it('starts empty, frozen', () => {
    const { pacer } = harness({ limits: perSecond(5) });
    const snapshot = pacer.getSnapshot();
    expect(snapshot).toEqual({
      queued: 0,
      inFlight: 0,
      admitted: 0,
      denied: 0,
      blockedKeys: [],
      paused: false,
      disposed: false,
    });
    expect(Object.isFrozen(snapshot)).toBe(true);
    expect(Object.isFrozen(snapshot.blockedKeys)).toBe(true);
  });

  it('returns the same object while nothing changed, even as time passes', () => {
    const { clock, pacer } = harness({ limits: perSecond(5) });
    pacer.schedule(() => 1);
    const first = pacer.getSnapshot();
    expect(pacer.getSnapshot()).toBe(first);
    clock.advance(10_000);
    pacer.inspect();
    expect(pacer.getSnapshot()).toBe(first);
  });

  it('returns a new object on change and never mutates a published one', async () => {
    const { pacer } = harness({ limits: perSecond(1) });
    const before = pacer.getSnapshot();
    const running = gate();
    pacer.schedule(() => running.promise);
    pacer.schedule(() => 2);
    const during = pacer.getSnapshot();
    expect(during).not.toBe(before);
    expect(before).toMatchObject({ queued: 0, inFlight: 0, admitted: 0 });
    expect(during).toMatchObject({ queued: 1, inFlight: 1, admitted: 1 });
    pacer.pause();
    const paused = pacer.getSnapshot();
    expect(paused).not.toBe(during);
    expect(during.paused).toBe(false);
    expect(paused.paused).toBe(true);
    running.open();
    await flushMicrotasks();
    expect(pacer.getSnapshot()).toMatchObject({ inFlight: 0, queued: 1, paused: true });
    expect(paused.inFlight).toBe(1);
  });

  it('keeps the blockedKeys array while the set of blocked keys is unchanged', () => {
    const { pacer } = harness({ limits: perSecond(1) });
    pacer.blockUntil('api', 1_000);
    const blocked = pacer.getSnapshot().blockedKeys;
    pacer.schedule(() => 1);
    expect(pacer.getSnapshot().blockedKeys).toBe(blocked);
  });
});

describe('subscribe', () => {
  it('calls listeners synchronously after a change, with the new snapshot ready', () => {
    const { pacer } = harness({ limits: perSecond(1) });
    const seen: number[] = [];
    pacer.subscribe(() => seen.push(pacer.getSnapshot().admitted));
    pacer.schedule(() => 1);
    expect(seen).toEqual([1]);
  });

  it('does not call listeners when nothing changed', () => {
    const { clock, pacer } = harness({ limits: perSecond(1) });
    const listener = vi.fn();
    pacer.subscribe(listener);
    pacer.resume();
    clock.advance(5_000);
    pacer.inspect();
    expect(listener).not.toHaveBeenCalled();
  });

  it('tells listeners once when one timer firing starts several tasks', () => {
    const { clock, pacer } = harness({ limits: perSecond(5) });
    pacer.blockUntil('default', 1_000);
    // Asynchronous tasks, so they are still in flight when the snapshot is read (a synchronous
    // task's slot is free as soon as it returns).
    for (let i = 0; i < 5; i++) pacer.schedule(async () => i);
    const listener = vi.fn();
    pacer.subscribe(listener);
    clock.advance(1_000);
    expect(listener).toHaveBeenCalledTimes(1);
    expect(pacer.getSnapshot()).toMatchObject({ queued: 0, inFlight: 5, blockedKeys: [] });
  });

  it('stops calling a listener once unsubscribed', () => {
    const { pacer } = harness({ limits: perSecond(5) });
    const listener = vi.fn();
    const unsubscribe = pacer.subscribe(listener);
    pacer.schedule(() => 1);
    unsubscribe();
    pacer.schedule(() => 2);
    expect(listener).toHaveBeenCalledTimes(1);
  });

  it('reports a listener that throws and keeps calling the others and pacing', async () => {
    const reportError = vi.fn();
    vi.stubGlobal('reportError', reportError);
    const { clock, pacer, task, startsOf } = harness({ limits: perSecond(1) });
    const boom = new Error('listener bug');
    pacer.subscribe(() => {
      throw boom;
    });
    const healthy = vi.fn();
    pacer.subscribe(healthy);
    const first = pacer.schedule(task('first'));
    const second = pacer.schedule(task('second'));
    expect(reportError).toHaveBeenCalledWith(boom);
    expect(healthy).toHaveBeenCalled();
    await clock.advanceAsync(1_000);
    await expect(Promise.all([first, second])).resolves.toEqual(['first', 'second']);
    expect(startsOf()).toEqual([0, 1000]);
  });

  it('falls back to console.error where reportError does not exist', () => {
    vi.stubGlobal('reportError', undefined);
    const consoleError = vi.spyOn(console, 'error').mockImplementation(() => {});
    const { pacer } = harness({ limits: perSecond(1) });
    const boom = new Error('listener bug');
    pacer.subscribe(() => {
      throw boom;
    });
    pacer.schedule(() => 1);
    expect(consoleError).toHaveBeenCalledWith(boom);
  });

  it('coalesces changes a listener makes into one more round instead of nesting', () => {
    const { pacer } = harness({ limits: perSecond(5) });
    const calls: number[] = [];
    let depth = 0;
    pacer.subscribe(() => {
      depth++;
      calls.push(depth);
      if (pacer.getSnapshot().admitted === 1) pacer.schedule(() => 'from listener');
      depth--;
    });
    pacer.schedule(() => 'first');
    expect(calls).toEqual([1, 1]);
    expect(pacer.getSnapshot().admitted).toBe(2);
  });
});

describe('inspect', () => {
  it('computes the live level at call time, for animations', () => {
    const { clock, pacer } = harness({ limits: perSecond(5) });
    for (let i = 0; i < 5; i++) pacer.schedule(() => i);
    expect(pacer.inspect()).toEqual({
      at: 0,
      level: 0,
      capacity: 5,
      limit: 5,
      queued: 0,
      blockedUntil: undefined,
    });
    clock.advance(100);
    expect(pacer.inspect().level).toBeCloseTo(0.5, 9);
    clock.advance(200);
    expect(pacer.inspect()).toMatchObject({ at: 300, level: expect.closeTo(1.5, 9) });
  });

  it('shows the policy a key learned from the server, and none before', () => {
    const { pacer } = harness({ limits: perSecond(5) });
    expect(pacer.inspect('api')).not.toHaveProperty('learned');
    // `RateLimit-Policy: "api";q=3;w=60`, as a paced fetch hands it on.
    pacer.observe('api', { kind: 'policy', remaining: 3, limit: 3, windowMs: 60_000 });
    expect(pacer.inspect('api')).toMatchObject({
      capacity: 3,
      limit: 3,
      learned: { limit: 3, windowMs: 60_000, source: 'server' },
    });
    expect(pacer.inspect('other')).not.toHaveProperty('learned');
  });

  it('tells when the next waiting task of a key starts and how long a block holds', () => {
    const { clock, pacer } = harness({ limits: perSecond(5, { burst: 2 }) });
    pacer.schedule(() => 1, { cost: 2 });
    pacer.schedule(() => 2, { cost: 2 });
    pacer.schedule(() => 3);
    const inspection = pacer.inspect('default');
    expect(inspection).toMatchObject({ capacity: 2, limit: 5, queued: 2, nextStartAt: 400 });
    expect(Object.isFrozen(inspection)).toBe(true);
    clock.advance(100);
    pacer.blockUntil('default', 1_000);
    expect(pacer.inspect()).toMatchObject({ blockedUntil: 1_000, nextStartAt: 1_000 });
    expect(pacer.inspect('idle-key')).toEqual({
      at: 100,
      level: 2,
      capacity: 2,
      limit: 5,
      queued: 0,
      blockedUntil: undefined,
    });
  });
});
