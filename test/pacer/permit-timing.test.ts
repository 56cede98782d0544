import { describe, expect, it } from 'vitest';
import { perSecond } from '../../src/core/policy.js';
import { harness } from './support.js';

describe('when a queued task starts', () => {
  it('starts on its permit to the µs, not at the whole ms after it', async () => {
    // 3 per second: a permit every 333.33… ms. A whole-ms timer would start them at 334 and 667.
    const { clock, pacer, task, startsOf } = harness({ limits: perSecond(3) });
    for (let i = 0; i < 5; i++) pacer.schedule(task(`t${i}`));
    await clock.advanceAsync(1_000);
    const [, , , fourth, fifth] = startsOf();
    expect(fourth).toBeGreaterThanOrEqual(1_000 / 3);
    expect(fourth).toBeLessThan(1_000 / 3 + 0.002);
    expect(fifth).toBeGreaterThanOrEqual(2_000 / 3);
    expect(fifth).toBeLessThan(2_000 / 3 + 0.002);
  });

  it('starts at the end of a server block that ends between whole ms', async () => {
    const { clock, pacer, task, startsOf } = harness({ limits: perSecond(5) });
    pacer.blockUntil('default', 250.5);
    pacer.schedule(task('t'));
    await clock.advanceAsync(300);
    expect(startsOf()).toEqual([250.5]);
  });

  it('never starts a task before its permit (a float a hair short does not count)', async () => {
    const { clock, pacer, startsOf, task } = harness({ limits: perSecond(7, { burst: 1 }) });
    for (let i = 0; i < 8; i++) pacer.schedule(task(`t${i}`));
    await clock.advanceAsync(2_000);
    const starts = startsOf();
    expect(starts).toHaveLength(8);
    for (const [k, at] of starts.entries()) {
      expect(at).toBeGreaterThanOrEqual((k * 1_000) / 7 - 1e-9);
    }
  });

  it('frees the slot of a synchronous task when it returns, so the next starts in the same turn', () => {
    const { clock, pacer, task, startsOf } = harness({ limits: perSecond(5), concurrency: 1 });
    pacer.blockUntil('default', 1_000);
    for (let i = 0; i < 3; i++) pacer.schedule(task(`t${i}`));
    clock.advance(1_000); // synchronous: no promise callback runs in between
    expect(startsOf()).toEqual([1_000, 1_000, 1_000]);
    expect(pacer.getSnapshot()).toMatchObject({ queued: 0, inFlight: 0 });
  });
});
