import { allow, type Decision, deny, wholeMs } from '../decision.js';
import type { Algorithm, ResolvedPolicy } from '../policy.js';
import { type Admits, type Strategy, settleRetry } from './strategy.js';

/**
 * The sliding window counter (the two-counter estimate): windows aligned to multiples of
 * `windowMs`, and the previous window's count weighted by how much of it the sliding window
 * still covers: `estimate = previous * (1 - elapsed / windowMs) + current`. Allowed iff
 * `floor(estimate) + cost <= limit`. Three numbers of state, close to the exact log in
 * practice; two idle windows count nothing.
 */
export class SlidingWindow implements Strategy, Admits {
  /** Index of the window `#current` belongs to. */
  #window = -Infinity;
  #previous = 0;
  #current = 0;

  constructor(readonly policy: ResolvedPolicy) {}

  get capacity(): number {
    return this.policy.capacity;
  }

  private windowAt(now: number): number {
    const index = Math.floor(now / this.policy.windowMs);
    return index > this.#window ? index : this.#window;
  }

  /** The previous window's count as seen from `window`. */
  private previousAt(window: number): number {
    if (window === this.#window) return this.#previous;
    return window === this.#window + 1 ? this.#current : 0;
  }

  private currentAt(window: number): number {
    return window === this.#window ? this.#current : 0;
  }

  /**
   * `floor(estimate)` at `now`. Computed as `floor(previous * (windowMs - elapsed) / windowMs)`
   * so that whole-ms times and windows give exact integer arithmetic.
   */
  private usedAt(now: number): number {
    const { windowMs } = this.policy;
    const window = this.windowAt(now);
    // `previousAt` and `currentAt` written out: a denial calls this in every step of
    // `settleRetry`, and with the calls V8 runs out of inlining budget there (15% slower).
    const last = this.#window;
    const current = window === last ? this.#current : 0;
    const previous = window === last ? this.#previous : window === last + 1 ? this.#current : 0;
    if (previous === 0) return current;
    const elapsed = Math.max(0, now - window * windowMs);
    return Math.floor((previous * (windowMs - elapsed)) / windowMs) + current;
  }

  /** The unfloored estimate, so a gauge moves smoothly as the previous window slides out. */
  level(now: number): number {
    const { limit, windowMs } = this.policy;
    const window = this.windowAt(now);
    const weight = (windowMs - Math.max(0, now - window * windowMs)) / windowMs;
    return Math.max(0, limit - this.previousAt(window) * weight - this.currentAt(window));
  }

  fits(at: number, cost: number): boolean {
    return this.usedAt(at) + cost <= this.policy.limit;
  }

  tryAcquire(now: number, cost: number): Decision {
    return this.decide(now, cost, true);
  }

  peek(now: number, cost: number): Decision {
    return this.decide(now, cost, false);
  }

  /** `tryAcquire` when `take`, else `peek`: one decision, so the two cannot disagree. */
  private decide(now: number, cost: number, take: boolean): Decision {
    const used = this.usedAt(now);
    const { limit, windowMs } = this.policy;
    if (used + cost > limit) return this.denial(now, cost, used);
    const window = this.windowAt(now);
    if (take) this.add(window, cost);
    // A permit taken now is in the current window, which rests two window starts from now.
    return allow(limit - used - cost, wholeMs((window + 2) * windowMs - now), limit);
  }

  private denial(now: number, cost: number, used: number): Decision {
    const { limit, windowMs } = this.policy;
    const window = this.windowAt(now);
    const previous = this.previousAt(window);
    const current = this.currentAt(window);
    const start = window * windowMs;
    // floor(p * (W - e) / W) <= room holds once e > W - (room + 1) * W / p.
    const room = limit - cost - current;
    const estimate =
      room >= 0
        ? start + windowMs - ((room + 1) * windowMs) / previous - now
        : start +
          windowMs +
          Math.max(0, windowMs - ((limit - cost + 1) * windowMs) / current) -
          now;
    const retryAfterMs = settleRetry(this, now, cost, estimate);
    return deny('rate', retryAfterMs, limit - used, wholeMs(this.restsAt(now) - now), limit);
  }

  /** Adds `n` permits to the counter of `window`, rolling the counters over to it first. */
  private add(window: number, n: number): void {
    if (window !== this.#window) {
      this.#previous = this.previousAt(window);
      this.#current = 0;
      this.#window = window;
    }
    this.#current += n;
  }

  isAtRest(now: number): boolean {
    const window = this.windowAt(now);
    return this.previousAt(window) === 0 && this.currentAt(window) === 0;
  }

  restsAt(now: number): number {
    const { windowMs } = this.policy;
    let at = now;
    if (this.#current > 0) at = (this.#window + 2) * windowMs;
    else if (this.#previous > 0) at = (this.#window + 1) * windowMs;
    return at > now ? at : now;
  }

  lowerRemaining(now: number, remaining: number): void {
    const missing = this.policy.limit - remaining - this.usedAt(now);
    if (missing > 0) this.add(this.windowAt(now), missing);
  }
}

/** The sliding window counter: three numbers per key, close to the exact log. No `burst`. */
export const slidingWindow: Algorithm = /* @__PURE__ */ Object.freeze({
  name: 'sliding-window',
  create: (policy: ResolvedPolicy) => new SlidingWindow(policy),
});
