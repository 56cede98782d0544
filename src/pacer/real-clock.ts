import type { PacerClock } from './options.js';
import { isPage, PageWait } from './page-waits.js';

/**
 * Below this many ms, Node's event loop is stepped with `setImmediate` instead of a timer.
 * Node keeps timers in whole ms of a loop time cached at the start of each turn, so a timer
 * fires up to ~1.7 ms early against `performance.now()` (and late under load; measured here),
 * and any delay under 1 ms becomes 1 ms. The pacer, woken early, re-arms for the remainder: a
 * timer for that would land it up to a whole ms late. A few loop turns of `setImmediate` land
 * within a few µs, at the price of keeping the loop busy for at most this long.
 */
const SPIN_BELOW_MS = 1.5;

/** Node's immediates, looked up at call time (browsers have none; the build has no Node types). */
interface Immediates {
  readonly setImmediate?: (callback: () => void) => unknown;
  readonly clearImmediate?: (handle: unknown) => void;
}
const host = globalThis as Immediates;

/** The timer handle of a short wait stepped on `setImmediate` (made only where it exists). */
class SteppedWait {
  immediate: unknown;
  keepsAlive = true;

  constructor(
    private readonly due: number,
    private readonly callback: () => void,
  ) {
    this.immediate = host.setImmediate?.(this.step);
  }

  private readonly step = (): void => {
    if (performance.now() >= this.due) {
      this.immediate = undefined;
      this.callback();
      return;
    }
    this.immediate = host.setImmediate?.(this.step);
    if (!this.keepsAlive) (this.immediate as { unref?: () => void }).unref?.();
  };

  ref(): void {
    this.keepsAlive = true;
    (this.immediate as { ref?: () => void } | undefined)?.ref?.();
  }

  unref(): void {
    this.keepsAlive = false;
    (this.immediate as { unref?: () => void } | undefined)?.unref?.();
  }

  cancel(): void {
    if (this.immediate !== undefined) host.clearImmediate?.(this.immediate);
    this.immediate = undefined;
  }
}

/**
 * The pacer's default clock: `performance.now()` and the global timers, looked up at call time
 * (importing the pacer touches no global: SSR, test fakes installed late). In Node, waits under
 * `SPIN_BELOW_MS` are stepped on `setImmediate` so a start lands on its permit, not up to a
 * millisecond after it. In a browser page each wait is a `PageWait` (page-waits.ts).
 *
 * **Hidden tabs.** What a page in the background can get, measured in Chromium 156 with a page
 * hidden behind another tab:
 * - Its timers wake at most once a second (all browsers do something like it), so a queued task
 *   starts up to ~1 s after its permit, and the tasks due in that second start together. That is
 *   late, never early: a burst never exceeds what the limit allows (the bucket's capacity).
 * - After 5 minutes hidden, Chrome allows a *chain* of timers one wake-up a minute ("intensive
 *   wake-up throttling"). The default clock arms every timer from a fresh message task, so the
 *   pacer is not a chain and keeps the once-a-second pace. A custom clock is on its own here.
 * - Coming back (`visibilitychange` to visible, `resume` after a freeze, `online`) starts what is
 *   due at once, and so does every task that settles (its slot frees, the pacer looks again).
 * - What no page can get: a tab the browser *freezes* (Page Lifecycle `freeze`: Chrome's tab
 *   freezing and memory saver, mobile browsers that suspend background tabs) runs no script at
 *   all until it is resumed, and a *discarded* tab is reloaded from scratch, its queue gone.
 *   Work that must survive that belongs in the outbox (`fetch-pacer/offline`), which persists
 *   it. A dedicated worker's timers are not throttled this way (measured), but a page's pacer
 *   does not start one behind your back.
 */
export const realClock: PacerClock = {
  now: () => performance.now(),
  setTimeout: (callback, ms) => {
    if (isPage()) return new PageWait(performance.now() + ms, callback);
    return ms < SPIN_BELOW_MS && typeof host.setImmediate === 'function'
      ? new SteppedWait(performance.now() + ms, callback)
      : globalThis.setTimeout(callback, ms);
  },
  clearTimeout: (handle) => {
    if (handle instanceof SteppedWait) handle.cancel();
    else if (handle instanceof PageWait) handle.cancel();
    else globalThis.clearTimeout(handle as Parameters<typeof clearTimeout>[0]);
  },
};
