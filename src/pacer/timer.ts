import { MAX_DELAY_MS } from '../core/signal.js';
import type { PacerClock } from './options.js';

// A timer is set for at most MAX_DELAY_MS, the longest delay `setTimeout` honours (2^31 - 1 ms,
// about 24.8 days): beyond it Node and browsers fire at once, which would turn a far-off server
// block into a busy loop; a longer wait is armed in steps (the pacer re-arms when a timer finds
// nothing due).

/** What Node's timers have and the browser's numeric handles lack. */
interface Refable {
  ref?: () => void;
  unref?: () => void;
}

/**
 * The pacer's one timer. `set` re-arms only when the due time changes, so a flood of events
 * that leave the earliest due key alone costs no `clearTimeout`/`setTimeout` pair.
 */
export class Timer {
  private handle: unknown;
  private armed = false;
  /** Ticker time the armed timer is for. */
  private at = Number.NaN;
  private keepsAlive = true;

  constructor(
    private readonly clock: PacerClock,
    /** Told the ticker time the timer was armed for (it may fire later: a hidden page). */
    private readonly onFire: (at: number) => void,
  ) {}

  /**
   * Arms for ticker time `at`, `delay` ms from now (Infinity: disarm). `keepAlive: false`
   * unrefs a Node timer, so a timer with no waiting task behind it (a block expiring, for the
   * snapshot) does not hold a process open.
   */
  set(at: number, delay: number, keepAlive: boolean): void {
    if (at === Number.POSITIVE_INFINITY) {
      this.clear();
      return;
    }
    if (!this.armed || this.at !== at) {
      this.clear();
      this.at = at;
      this.armed = true;
      this.keepsAlive = true;
      this.handle = this.clock.setTimeout(this.fire, Math.min(Math.max(0, delay), MAX_DELAY_MS));
    }
    if (keepAlive !== this.keepsAlive) {
      this.keepsAlive = keepAlive;
      const handle = this.handle as Refable | null;
      if (typeof handle === 'object' && handle !== null) {
        if (keepAlive) handle.ref?.();
        else handle.unref?.();
      }
    }
  }

  clear(): void {
    if (!this.armed) return;
    this.armed = false;
    this.at = Number.NaN;
    const handle = this.handle;
    this.handle = undefined;
    this.clock.clearTimeout(handle);
  }

  private readonly fire = (): void => {
    const { at } = this;
    this.armed = false;
    this.at = Number.NaN;
    this.handle = undefined;
    this.onFire(at);
  };
}
