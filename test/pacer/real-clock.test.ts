import { afterEach, describe, expect, it, vi } from 'vitest';
import { realClock } from '../../src/pacer/real-clock.js';

/** One turn of Node's event loop: every immediate queued before it has run. */
const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('the default clock in Node', () => {
  let now = 0;
  afterEach(() => {
    vi.restoreAllMocks();
  });

  function ownTime() {
    now = 1_000;
    vi.spyOn(performance, 'now').mockImplementation(() => now);
  }

  it('steps a sub-1.5 ms wait on setImmediate, firing on the first turn at or after its time', async () => {
    ownTime();
    const fired = vi.fn();
    realClock.setTimeout(fired, 0.4);
    await turn();
    await turn();
    expect(fired).not.toHaveBeenCalled();
    now += 0.39;
    await turn();
    expect(fired).not.toHaveBeenCalled();
    now += 0.01;
    await turn();
    expect(fired).toHaveBeenCalledTimes(1);
    now += 10;
    await turn();
    expect(fired).toHaveBeenCalledTimes(1);
  });

  it('cancels a stepped wait, and unrefs it for a wait that should not hold the process', async () => {
    ownTime();
    const fired = vi.fn();
    const handle = realClock.setTimeout(fired, 1) as { unref(): void; ref(): void };
    handle.unref();
    await turn();
    realClock.clearTimeout(handle);
    now += 5;
    await turn();
    await turn();
    expect(fired).not.toHaveBeenCalled();
  });

  it('leaves longer waits to the global setTimeout and clearTimeout', () => {
    const set = vi.spyOn(globalThis, 'setTimeout');
    const clear = vi.spyOn(globalThis, 'clearTimeout');
    const handle = realClock.setTimeout(() => {}, 20);
    expect(set).toHaveBeenCalledWith(expect.any(Function), 20);
    realClock.clearTimeout(handle);
    expect(clear).toHaveBeenCalledWith(handle);
  });
});
