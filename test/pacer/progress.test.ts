import { afterEach, describe, expect, it, vi } from 'vitest';
import { perSecond } from '../../src/core/policy.js';
import { createPacer, type TaskProgress } from '../../src/pacer/index.js';
import { createManualClock } from '../../src/testing/index.js';
import { fakeStore } from '../support/fake-store.js';
import { flushMicrotasks, harness } from './support.js';

/** An `onProgress` listener that records every report. */
function recorder() {
  const reports: TaskProgress[] = [];
  return { reports, onProgress: (progress: TaskProgress) => reports.push(progress) };
}

const started = { state: 'started' };
const queued = (startAt: number | undefined) => ({ state: 'queued', startAt });
const blocked = (until: number) => ({ state: 'blocked', until });

describe('onProgress', () => {
  afterEach(() => {
    vi.unstubAllGlobals();
  });

  it('reports only `started` for a task that starts at once', () => {
    const { pacer } = harness({ limits: perSecond(5) });
    const { reports, onProgress } = recorder();
    pacer.schedule(() => 'x', { onProgress });
    expect(reports).toEqual([started]);
  });

  it('projects each queued task to its ideal slot, then reports its start, once each', async () => {
    // 5 per second, burst 5: the sixth task's permit exists at 200 ms, the seventh at 400.
    const { clock, pacer } = harness({ limits: perSecond(5) });
    for (let i = 0; i < 5; i++) pacer.schedule(() => i);
    const sixth = recorder();
    const seventh = recorder();
    pacer.schedule(() => 6, { onProgress: sixth.onProgress });
    pacer.schedule(() => 7, { onProgress: seventh.onProgress });
    expect(sixth.reports).toEqual([queued(200)]);
    expect(seventh.reports).toEqual([queued(400)]);
    await clock.advanceAsync(200);
    expect(sixth.reports).toEqual([queued(200), started]);
    // Time passing and the task ahead starting leave the projection where it was: no report.
    expect(seventh.reports).toEqual([queued(400)]);
    await clock.advanceAsync(200);
    expect(seventh.reports).toEqual([queued(400), started]);
  });

  it('moves the projection back when a task of higher priority cuts in, and forward on abort', async () => {
    const { clock, pacer } = harness({ limits: perSecond(5) });
    for (let i = 0; i < 5; i++) pacer.schedule(() => i);
    const low = recorder();
    pacer.schedule(() => 'low', { onProgress: low.onProgress });
    const controller = new AbortController();
    pacer.schedule(() => 'high', { priority: 1, signal: controller.signal }).catch(() => 'aborted');
    expect(low.reports).toEqual([queued(200), queued(400)]);
    controller.abort();
    expect(low.reports).toEqual([queued(200), queued(400), queued(200)]);
    await clock.advanceAsync(200);
    expect(low.reports.at(-1)).toEqual(started);
  });

  it('reports a server block with its end, then the start when the block is over', async () => {
    const { clock, pacer } = harness({ limits: perSecond(5) });
    pacer.blockUntil('default', 1_500);
    const { reports, onProgress } = recorder();
    pacer.schedule(() => 'x', { onProgress });
    expect(reports).toEqual([blocked(1_500)]);
    pacer.blockUntil('default', 2_000); // the server extended it
    expect(reports).toEqual([blocked(1_500), blocked(2_000)]);
    await clock.advanceAsync(1_999);
    expect(reports).toHaveLength(2);
    await clock.advanceAsync(1);
    expect(reports).toEqual([blocked(1_500), blocked(2_000), started]);
  });

  it('says the start is unknown while the task waits only for a concurrency slot or resume()', async () => {
    const { clock, pacer } = harness({ limits: perSecond(100), concurrency: 1 });
    let finish: () => void = () => {};
    pacer.schedule(() => new Promise<void>((resolve) => (finish = resolve)));
    const { reports, onProgress } = recorder();
    pacer.schedule(() => 'next', { onProgress });
    expect(reports).toEqual([queued(undefined)]);
    pacer.pause();
    finish();
    await flushMicrotasks();
    expect(reports).toEqual([queued(undefined)]);
    pacer.resume();
    expect(reports).toEqual([queued(undefined), started]);
    await clock.advanceAsync(0);
  });

  it('reports nothing more once the task is aborted, denied or disposed', async () => {
    const { pacer } = harness({ limits: perSecond(1), maxWaitMs: 5_000 });
    pacer.schedule(() => 'first');
    const controller = new AbortController();
    const aborted = recorder();
    const waiting = pacer.schedule(() => 'x', {
      signal: controller.signal,
      onProgress: aborted.onProgress,
    });
    controller.abort();
    await expect(waiting).rejects.toBeDefined();
    const disposed = recorder();
    const last = pacer.schedule(() => 'y', { onProgress: disposed.onProgress });
    pacer.dispose();
    await expect(last).rejects.toThrow(/disposed/);
    expect(aborted.reports).toEqual([queued(1_000)]);
    expect(disposed.reports).toEqual([queued(1_000)]);
  });

  it('survives a listener that aborts another task or throws, reporting the error', async () => {
    const reportError = vi.fn();
    vi.stubGlobal('reportError', reportError);
    const { clock, pacer } = harness({ limits: perSecond(5) });
    for (let i = 0; i < 5; i++) pacer.schedule(() => i);
    const controller = new AbortController();
    const victim = pacer.schedule(() => 'victim', { signal: controller.signal });
    const thrower = recorder();
    pacer.schedule(() => 'a', {
      onProgress: (progress) => {
        thrower.onProgress(progress);
        controller.abort(); // the task ahead leaves while reports are being made
        throw new Error('listener bug');
      },
    });
    await expect(victim).rejects.toBeDefined();
    // Told 400 first (behind the victim), then 200 once the victim had gone.
    expect(thrower.reports).toEqual([queued(400), queued(200)]);
    expect(reportError).toHaveBeenCalledWith(expect.objectContaining({ message: 'listener bug' }));
    await clock.advanceAsync(200);
    expect(thrower.reports.at(-1)).toEqual(started);
  });

  it('tells each task of a long line once queued and once started on a clock with noise', async () => {
    // A real clock moves between two readings; a projection re-derived from two of them moved
    // every task behind the head on every start (issue 15: O(N²) reports for N tasks).
    const clock = createManualClock({ jitter: 0.05, seed: 7 });
    const pacer = createPacer({ limits: perSecond(10), clock });
    const lines = Array.from({ length: 100 }, () => recorder());
    for (const { onProgress } of lines) void pacer.schedule(() => 'x', { onProgress });
    for (let step = 0; step < 1_100 && pacer.getSnapshot().queued > 0; step++) {
      await clock.advanceAsync(10);
    }
    expect(pacer.getSnapshot().queued).toBe(0);
    for (const [i, { reports }] of lines.entries()) {
      // The burst of 10 starts at once; then one each 100 ms, each on its slot within the noise.
      if (i < 10) expect(reports).toEqual([started]);
      else expect(reports).toEqual([queued(expect.closeTo((i - 9) * 100, 0) as number), started]);
    }
  });

  it('moves every projection behind a task that leaves from the middle, and none ahead', async () => {
    const { pacer } = harness({ limits: perSecond(10) });
    for (let i = 0; i < 10; i++) pacer.schedule(() => i);
    const ahead = recorder();
    const behind = recorder();
    const controller = new AbortController();
    pacer.schedule(() => 'ahead', { onProgress: ahead.onProgress });
    pacer.schedule(() => 'gone', { signal: controller.signal }).catch(() => 'aborted');
    pacer.schedule(() => 'behind', { onProgress: behind.onProgress });
    controller.abort();
    expect(ahead.reports).toEqual([queued(100)]);
    expect(behind.reports).toEqual([queued(300), queued(200)]);
  });

  it('rejects a listener that is not a function, naming the field', () => {
    const { pacer } = harness({ limits: perSecond(5) });
    expect(() => pacer.schedule(() => 1, { onProgress: 'nope' as unknown as () => void })).toThrow(
      /`onProgress` to be a function, got .*nope/,
    );
  });

  it('works through a store: unknown while the store decides, then started', async () => {
    const clock = createManualClock();
    const fake = fakeStore({ now: clock.now, answer: 'manual' });
    const pacer = createPacer({ limits: perSecond(2), clock, store: fake.store });
    const { reports, onProgress } = recorder();
    pacer.schedule(() => 'x', { onProgress });
    expect(reports).toEqual([queued(undefined)]);
    fake.pending[0]?.answer();
    await flushMicrotasks();
    expect(reports).toEqual([queued(undefined), started]);
  });
});
