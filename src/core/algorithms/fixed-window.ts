import { allow, type Decision, deny, wholeMs } from '../decision.js';
import type { Algorithm, ResolvedPolicy } from '../policy.js';
import { type Admits, type Strategy, settleRetry } from './strategy.js';

/**
 * Fixed windows aligned to multiples of `windowMs` from the ticker's zero, one counter each.
 * Cheap and easy to explain, but it admits up to twice the limit across a window boundary
 * (`limit` at the end of one window, `limit` again at the start of the next).
 */
export class FixedWindow implements Strategy, Admits {
  /** Index of the window `#count` belongs to. */
  #window = -Infinity;
  #count = 0;

  constructor(readonly policy: ResolvedPolicy) {}

  get capacity(): number {
    return this.policy.capacity;
  }

  /** The window `now` falls in; never one before the state's own (time does not run back). */
  private windowAt(now: number): number {
    const index = Math.floor(now / this.policy.windowMs);
    return index > this.#window ? index : this.#window;
  }

  private usedIn(window: number): number {
    return window === this.#window ? this.#count : 0;
  }

  level(now: number): number {
    return this.policy.limit - this.usedIn(this.windowAt(now));
  }

  fits(at: number, cost: number): boolean {
    return this.usedIn(this.windowAt(at)) + cost <= this.policy.limit;
  }

  tryAcquire(now: number, cost: number): Decision {
    return this.decide(now, cost, true);
  }

  peek(now: number, cost: number): Decision {
    return this.decide(now, cost, false);
  }

  /** `tryAcquire` when `take`, else `peek`: one decision, so the two cannot disagree. */
  private decide(now: number, cost: number, take: boolean): Decision {
    const window = this.windowAt(now);
    const used = this.usedIn(window);
    const { limit, windowMs } = this.policy;
    const reset = (window + 1) * windowMs - now;
    if (used + cost > limit) {
      const retryAfterMs = settleRetry(this, now, cost, reset);
      return deny('rate', retryAfterMs, limit - used, wholeMs(reset), limit);
    }
    if (take) this.set(window, used + cost);
    return allow(limit - used - cost, wholeMs(reset), limit);
  }

  private set(window: number, count: number): void {
    this.#window = window;
    this.#count = count;
  }

  isAtRest(now: number): boolean {
    return this.usedIn(this.windowAt(now)) === 0;
  }

  restsAt(now: number): number {
    if (this.#count === 0) return now;
    const at = (this.#window + 1) * this.policy.windowMs;
    return at > now ? at : now;
  }

  lowerRemaining(now: number, remaining: number): void {
    const window = this.windowAt(now);
    const target = this.policy.limit - remaining;
    if (this.usedIn(window) < target) this.set(window, target);
  }
}

/** Fixed windows: one counter per key, up to twice the limit across a boundary. No `burst`. */
export const fixedWindow: Algorithm = /* @__PURE__ */ Object.freeze({
  name: 'fixed-window',
  create: (policy: ResolvedPolicy) => new FixedWindow(policy),
});
