import { allow, type Decision, deny, wholeMs } from '../decision.js';
import type { ResolvedPolicy } from '../policy.js';
import { type Admits, type Strategy, settleRetry } from './strategy.js';

/**
 * Fixed windows aligned to multiples of `windowMs` from the ticker's zero, one counter each.
 * Cheap and easy to explain, but it admits up to twice the limit across a window boundary
 * (`limit` at the end of one window, `limit` again at the start of the next).
 */
export class FixedWindow implements Strategy, Admits {
  /** Index of the window `count` belongs to. */
  private window = Number.NEGATIVE_INFINITY;
  private count = 0;

  constructor(readonly policy: ResolvedPolicy) {}

  get capacity(): number {
    return this.policy.capacity;
  }

  /** The window `now` falls in; never one before the state's own (time does not run back). */
  private windowAt(now: number): number {
    const index = Math.floor(now / this.policy.windowMs);
    return index > this.window ? index : this.window;
  }

  private usedAt(now: number): number {
    return this.windowAt(now) === this.window ? this.count : 0;
  }

  level(now: number): number {
    return this.policy.limit - this.usedAt(now);
  }

  fits(at: number, cost: number): boolean {
    return this.usedAt(at) + cost <= this.policy.limit;
  }

  tryAcquire(now: number, cost: number): Decision {
    const window = this.windowAt(now);
    const used = window === this.window ? this.count : 0;
    const { limit, windowMs } = this.policy;
    if (used + cost > limit) return this.denial(now, cost, window, used);
    this.window = window;
    this.count = used + cost;
    return allow(limit - this.count, wholeMs((window + 1) * windowMs - now), limit);
  }

  peek(now: number, cost: number): Decision {
    const window = this.windowAt(now);
    const used = window === this.window ? this.count : 0;
    const { limit, windowMs } = this.policy;
    if (used + cost > limit) return this.denial(now, cost, window, used);
    return allow(limit - used - cost, wholeMs((window + 1) * windowMs - now), limit);
  }

  private denial(now: number, cost: number, window: number, used: number): Decision {
    const { limit, windowMs } = this.policy;
    const reset = (window + 1) * windowMs - now;
    const retryAfterMs = settleRetry(this, now, cost, reset);
    return deny('rate', retryAfterMs, limit - used, wholeMs(reset), limit);
  }

  isAtRest(now: number): boolean {
    return this.usedAt(now) === 0;
  }

  restsAt(now: number): number {
    if (this.count === 0) return now;
    const at = (this.window + 1) * this.policy.windowMs;
    return at > now ? at : now;
  }

  lowerRemaining(now: number, remaining: number): void {
    const window = this.windowAt(now);
    const used = window === this.window ? this.count : 0;
    const target = this.policy.limit - remaining;
    if (used >= target) return;
    this.window = window;
    this.count = target;
  }
}
