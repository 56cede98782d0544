import { describe, expect, it } from 'vitest';
import { perSecond } from '../../src/core/policy.js';
import { LocalPermits } from '../../src/pacer/local-permits.js';
import { resolvePacerOptions } from '../../src/pacer/options.js';
import { Scheduler } from '../../src/pacer/scheduler.js';
import { createManualClock } from '../../src/testing/index.js';
import { flushMicrotasks, gate } from './support.js';

describe('the permit source seam', () => {
  it('hears each started task settle, with its key and cost, on the fast and the queued path', async () => {
    const clock = createManualClock();
    const settled: [string, number, number][] = [];
    const scheduler = new Scheduler(resolvePacerOptions({ limits: perSecond(2), clock }), (core) =>
      Object.defineProperties(new LocalPermits(core), {
        settled: { value: (key: string, cost: number) => settled.push([key, cost, clock.now()]) },
        settles: { value: true },
      }),
    );
    const slow = gate();
    scheduler.schedule(() => slow.promise, { key: 'a' }); // fast path, settles later
    scheduler.schedule(() => 'sync', { key: 'a' }); // fast path, over when it returns
    const failing = scheduler.schedule(
      () => {
        throw new Error('boom');
      },
      { key: 'a', cost: 2 },
    ); // queued: no permit left
    failing.catch(() => {});
    expect(settled).toEqual([['a', 1, 0]]);
    await clock.advanceAsync(1_000);
    expect(settled).toEqual([
      ['a', 1, 0],
      ['a', 2, 1_000],
    ]);
    slow.open();
    await flushMicrotasks();
    expect(settled).toEqual([
      ['a', 1, 0],
      ['a', 2, 1_000],
      ['a', 1, 1_000],
    ]);
  });
});
