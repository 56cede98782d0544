import { allow, type Decision, deny, wholeMs } from '../decision.js';
import type { Algorithm, ResolvedPolicy } from '../policy.js';
import { type Admits, type Strategy, settleRetry } from './strategy.js';

/** First size of a log's ring buffer; it doubles on demand up to `limit`. */
const INITIAL_SLOTS = 8;

/**
 * The exact sliding log: one timestamp per permit, an entry at time s counting while
 * `now - windowMs < s` (an entry exactly one window old is out). Timestamps live in a
 * Float64Array ring buffer that grows on demand up to `limit` slots, never boxed.
 */
export class SlidingLog implements Strategy, Admits {
  private log: Float64Array;
  /** Slot of the oldest entry. */
  private head = 0;
  private count = 0;

  constructor(readonly policy: ResolvedPolicy) {
    this.log = new Float64Array(Math.min(policy.limit, INITIAL_SLOTS));
  }

  get capacity(): number {
    return this.policy.capacity;
  }

  /** The i-th entry, oldest first. */
  private entry(i: number): number {
    const slot = this.head + i;
    const size = this.log.length;
    return this.log[slot < size ? slot : slot - size] as number;
  }

  private setEntry(i: number, at: number): void {
    const slot = this.head + i;
    const size = this.log.length;
    this.log[slot < size ? slot : slot - size] = at;
  }

  /** How many of the oldest entries are out of the window at `now`. */
  private expiredAt(now: number): number {
    return this.countBefore(now - this.policy.windowMs, true);
  }

  /** How many of the oldest entries are before `at`, or at it too if `inclusive` (a binary search). */
  private countBefore(at: number, inclusive: boolean): number {
    let low = 0;
    let high = this.count;
    while (low < high) {
      const mid = (low + high) >>> 1;
      const entry = this.entry(mid);
      if (entry < at || (inclusive && entry === at)) low = mid + 1;
      else high = mid;
    }
    return low;
  }

  private msToEmpty(now: number): number {
    return this.count === 0 ? 0 : wholeMs(this.entry(this.count - 1) + this.policy.windowMs - now);
  }

  level(now: number): number {
    return this.policy.limit - this.count + this.expiredAt(now);
  }

  fits(at: number, cost: number): boolean {
    return this.count - this.expiredAt(at) + cost <= this.policy.limit;
  }

  tryAcquire(now: number, cost: number): Decision {
    const expired = this.expiredAt(now);
    const used = this.count - expired;
    const { limit, windowMs } = this.policy;
    if (used + cost > limit) return this.denial(now, cost, expired, used);
    this.drop(expired);
    this.append(now, cost);
    return allow(limit - used - cost, wholeMs(windowMs), limit);
  }

  peek(now: number, cost: number): Decision {
    const expired = this.expiredAt(now);
    const used = this.count - expired;
    const { limit, windowMs } = this.policy;
    if (used + cost > limit) return this.denial(now, cost, expired, used);
    return allow(limit - used - cost, wholeMs(windowMs), limit);
  }

  private denial(now: number, cost: number, expired: number, used: number): Decision {
    const { limit, windowMs } = this.policy;
    // The request fits once enough of the oldest live entries have left the window.
    const mustLeave = used + cost - limit;
    const estimate = this.entry(expired + mustLeave - 1) + windowMs - now;
    const retryAfterMs = settleRetry(this, now, cost, estimate);
    return deny('rate', retryAfterMs, limit - used, this.msToEmpty(now), limit);
  }

  isAtRest(now: number): boolean {
    return this.count === 0 || this.expiredAt(now) === this.count;
  }

  restsAt(now: number): number {
    if (this.count === 0) return now;
    const at = this.entry(this.count - 1) + this.policy.windowMs;
    return at > now ? at : now;
  }

  /** Entries the log still holds from `since` on. */
  countSince(since: number): number {
    return this.count - this.countBefore(since, false);
  }

  lowerRemaining(now: number, remaining: number): void {
    const expired = this.expiredAt(now);
    const missing = this.policy.limit - remaining - (this.count - expired);
    if (missing <= 0) return;
    // Stand-in entries at `now` take the permits the server says are gone.
    this.drop(expired);
    this.append(now, missing);
  }

  /**
   * Takes back up to `n` entries stamped `at` (stand-ins a `lowerRemaining` put there, which a
   * newer count replaces) and returns how many it took. Entries of one stamp are alike.
   */
  withdraw(at: number, n: number): number {
    const from = this.countBefore(at, false);
    const to = this.countBefore(at, true);
    const taken = to - from < n ? to - from : n;
    if (!(taken > 0)) return 0;
    for (let i = to; i < this.count; i++) this.setEntry(i - taken, this.entry(i));
    this.count -= taken;
    if (this.count === 0) this.head = 0;
    return taken;
  }

  /**
   * Counts `n` permits at `now` whether they fit or not (answers of permits taken earlier, see
   * `ArrivalSafe`); beyond `limit` the oldest give way, as the log never holds more.
   */
  record(now: number, n: number): void {
    const expired = this.expiredAt(now);
    const over = this.count - expired + n - this.policy.limit;
    this.drop(expired + (over > 0 ? Math.min(over, this.count - expired) : 0));
    this.append(now, Math.min(n, this.policy.limit));
  }

  retimed(windowMs: number): SlidingLog {
    const next = new SlidingLog(Object.freeze({ ...this.policy, windowMs }));
    next.log = this.log.slice();
    next.head = this.head;
    next.count = this.count;
    return next;
  }

  private drop(n: number): void {
    if (n === 0) return;
    this.count -= n;
    this.head = this.count === 0 ? 0 : (this.head + n) % this.log.length;
  }

  private append(now: number, n: number): void {
    if (this.count + n > this.log.length) this.grow(this.count + n);
    const size = this.log.length;
    for (let i = 0; i < n; i++) {
      const slot = this.head + this.count;
      this.log[slot < size ? slot : slot - size] = now;
      this.count++;
    }
  }

  private grow(needed: number): void {
    const size = Math.min(this.policy.limit, Math.max(needed, this.log.length * 2));
    const next = new Float64Array(size);
    for (let i = 0; i < this.count; i++) next[i] = this.entry(i);
    this.log = next;
    this.head = 0;
  }
}

/** The exact sliding log: one timestamp per permit. It takes no `burst` (its burst is its limit). */
export const slidingLog: Algorithm = /* @__PURE__ */ Object.freeze({
  name: 'sliding-log',
  create: (policy: ResolvedPolicy) => new SlidingLog(policy),
});
