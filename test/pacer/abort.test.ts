import { describe, expect, it } from 'vitest';
import { perSecond } from '../../src/core/policy.js';
import { flushMicrotasks, gate, harness, outcome, trackListeners } from './support.js';

describe('abort', () => {
  it('rejects at once with the reason of an already-aborted signal, queueing nothing', async () => {
    const { pacer, clock } = harness({ limits: perSecond(1) });
    const controller = new AbortController();
    const reason = new Error('gone');
    controller.abort(reason);
    const listeners = trackListeners(controller.signal);
    let ran = false;
    await expect(
      pacer.schedule(
        () => {
          ran = true;
        },
        { signal: controller.signal },
      ),
    ).rejects.toBe(reason);
    expect(ran).toBe(false);
    expect(listeners.added).toBe(0);
    expect(pacer.inspect().level).toBe(1);
    expect(pacer.getSnapshot()).toMatchObject({ queued: 0, admitted: 0 });
    expect(clock.pendingTimers).toBe(0);
  });

  it('takes a waiting task out of the queue at once, rejecting with signal.reason', async () => {
    const { pacer, clock } = harness({ limits: perSecond(1) });
    pacer.schedule(() => 'first');
    const controller = new AbortController();
    const listeners = trackListeners(controller.signal);
    let ran = false;
    const waiting = outcome(
      pacer.schedule(
        () => {
          ran = true;
        },
        { signal: controller.signal },
      ),
    );
    expect(listeners.live).toBe(1);
    expect(pacer.getSnapshot().queued).toBe(1);
    controller.abort();
    // Left the queue synchronously, before any time passed.
    expect(pacer.getSnapshot().queued).toBe(0);
    await flushMicrotasks();
    expect(waiting.status).toBe('rejected');
    expect(waiting.reason).toBe(controller.signal.reason);
    expect((waiting.reason as DOMException).name).toBe('AbortError');
    expect(listeners.live).toBe(0);
    // It took no permit and left no timer behind.
    expect(clock.pendingTimers).toBe(0);
    await clock.advanceAsync(5_000);
    expect(ran).toBe(false);
  });

  it('moves the next task up when the head is aborted, taking nothing', async () => {
    const { clock, pacer, task, startsOf } = harness({ limits: perSecond(5) });
    for (let i = 0; i < 5; i++) pacer.schedule(task(`burst${i}`));
    const controller = new AbortController();
    const big = pacer.schedule(task('big'), { cost: 5, signal: controller.signal });
    pacer.schedule(task('small'));
    await clock.advanceAsync(300);
    controller.abort();
    await expect(big).rejects.toMatchObject({ name: 'AbortError' });
    // The small one was due at 200 behind the big one; now first in line, it starts at once.
    await clock.advanceAsync(0);
    expect(startsOf('small')).toEqual([300]);
    // 1.5 permits had refilled, the small task took one: the big one took nothing.
    expect(pacer.inspect().level).toBeCloseTo(0.5, 9);
  });

  it('keeps the start times of the others when a middle task is aborted', async () => {
    const { clock, pacer, task, startsOf } = harness({ limits: perSecond(5) });
    for (let i = 0; i < 5; i++) pacer.schedule(task(`burst${i}`));
    const controller = new AbortController();
    pacer.schedule(task('A'));
    pacer.schedule(task('B'), { signal: controller.signal }).catch(() => {});
    pacer.schedule(task('C'));
    controller.abort();
    await clock.advanceAsync(1_000);
    expect(startsOf('A')).toEqual([200]);
    expect(startsOf('C')).toEqual([400]);
    expect(startsOf('B')).toEqual([]);
  });

  it('does not cancel a task that has started; one that starts at once never listens', async () => {
    const { pacer } = harness({ limits: perSecond(5) });
    const controller = new AbortController();
    const listeners = trackListeners(controller.signal);
    const running = gate<string>();
    const result = pacer.schedule(() => running.promise, { signal: controller.signal });
    expect(listeners.added).toBe(0);
    expect(listeners.live).toBe(0);
    controller.abort();
    running.open('done anyway');
    await expect(result).resolves.toBe('done anyway');
  });

  it('removes its listener when a waiting task starts, and when it settles', async () => {
    const { clock, pacer } = harness({ limits: perSecond(1) });
    pacer.schedule(() => 'first');
    // A signal each: tasks sharing one signal share its one listener (hostile.test.ts).
    const controllers = [new AbortController(), new AbortController()] as const;
    const tracked = controllers.map((controller) => trackListeners(controller.signal));
    const listeners = {
      get live() {
        return (tracked[0]?.live ?? 0) + (tracked[1]?.live ?? 0);
      },
    };
    const ok = outcome(pacer.schedule(() => 'ok', { signal: controllers[0].signal }));
    const failed = outcome(
      pacer.schedule(
        () => {
          throw new Error('fails');
        },
        { signal: controllers[1].signal },
      ),
    );
    expect(listeners.live).toBe(2);
    await clock.advanceAsync(1_000);
    expect(ok).toMatchObject({ status: 'resolved', value: 'ok' });
    expect(listeners.live).toBe(1);
    await clock.advanceAsync(1_000);
    expect(failed.status).toBe('rejected');
    expect(listeners.live).toBe(0);
  });

  it('removes its listener when the pacer is disposed', async () => {
    const { pacer } = harness({ limits: perSecond(1) });
    pacer.schedule(() => 'first');
    const controller = new AbortController();
    const listeners = trackListeners(controller.signal);
    const waiting = pacer.schedule(() => 'never', { signal: controller.signal });
    pacer.dispose();
    await expect(waiting).rejects.toMatchObject({ name: 'PacerDisposedError' });
    expect(listeners.live).toBe(0);
  });

  it('settles an aborted task once, even if the signal is aborted again', async () => {
    const { pacer } = harness({ limits: perSecond(1) });
    pacer.schedule(() => 'first');
    const controller = new AbortController();
    const settled: unknown[] = [];
    pacer
      .schedule(() => 'never', { signal: controller.signal })
      .then(
        (value) => settled.push(value),
        (reason: unknown) => settled.push(reason),
      );
    controller.abort('first reason');
    controller.abort('second reason');
    await flushMicrotasks();
    expect(settled).toEqual(['first reason']);
  });

  it('frees its place in a bounded queue', async () => {
    const { pacer } = harness({ limits: perSecond(1), maxQueue: 1 });
    pacer.schedule(() => 'first');
    const controller = new AbortController();
    pacer.schedule(() => 'waits', { signal: controller.signal }).catch(() => {});
    await expect(pacer.schedule(() => 'full')).rejects.toMatchObject({ name: 'QueueFullError' });
    controller.abort();
    const next = outcome(pacer.schedule(() => 'fits now'));
    await flushMicrotasks();
    expect(next.status).toBe('pending');
    expect(pacer.getSnapshot().queued).toBe(1);
  });
});
