import { allow, type Decision, deny, EPSILON, wholeMs } from '../decision.js';
import type { ResolvedPolicy } from '../policy.js';
import { type Admits, type Strategy, settleRetry } from './strategy.js';
import { whole } from './token-bucket.js';

/**
 * Generic Cell Rate Algorithm: the token bucket's admissions from the theoretical arrival time
 * (`tat`): the ticker time at which the bucket would be full again. Each permit pushes it
 * `windowMs / limit` further; a request fits while the debt `tat - now` leaves room for its cost
 * within `capacity`. One number is what makes it cheap to store remotely.
 *
 * In memory `tat` is kept as `stamp + ahead`, not as one absolute number: a double near the
 * ticker's value resolves only so much (1.9e-9 ms at 1e7 ms, three hours of uptime), and
 * rounding `tat` there on each permit cost more than EPSILON in permits: a fresh perSecond(39)
 * key denied the 39th permit of its burst. `ahead` stays small, as the token bucket's numbers do,
 * so both admit exactly alike.
 */
export class Gcra implements Strategy, Admits {
  /** Ticker time of the last update; -Infinity until the first permit is taken. */
  private stamp = Number.NEGATIVE_INFINITY;
  /** `tat - stamp` in ms. */
  private ahead = 0;

  get capacity(): number {
    return this.policy.capacity;
  }

  constructor(readonly policy: ResolvedPolicy) {}

  /** `tat - now` in ms, never negative. `now - stamp` is exact for whole ms and close doubles. */
  private debtAt(now: number): number {
    const elapsed = now - this.stamp;
    if (!(elapsed > 0)) return this.ahead;
    return this.ahead > elapsed ? this.ahead - elapsed : 0;
  }

  /** Permits available at `now`: capacity minus the debt, in permits. */
  private tokensAt(now: number): number {
    const { limit, windowMs, capacity } = this.policy;
    return capacity - (this.debtAt(now) * limit) / windowMs;
  }

  level(now: number): number {
    return Math.max(0, this.tokensAt(now));
  }

  fits(at: number, cost: number): boolean {
    return this.tokensAt(at) >= cost - EPSILON;
  }

  tryAcquire(now: number, cost: number): Decision {
    const tokens = this.tokensAt(now);
    if (tokens < cost - EPSILON) return this.denial(now, cost, tokens);
    const { limit, windowMs } = this.policy;
    const debt = this.debtAt(now) + (cost * windowMs) / limit;
    this.ahead = debt;
    if (now > this.stamp) this.stamp = now;
    return allow(whole(tokens - cost), wholeMs(debt), limit);
  }

  peek(now: number, cost: number): Decision {
    const tokens = this.tokensAt(now);
    if (tokens < cost - EPSILON) return this.denial(now, cost, tokens);
    const { limit, windowMs } = this.policy;
    const debt = this.debtAt(now) + (cost * windowMs) / limit;
    return allow(whole(tokens - cost), wholeMs(debt), limit);
  }

  private denial(now: number, cost: number, tokens: number): Decision {
    const { limit, windowMs } = this.policy;
    const estimate = ((cost - tokens) * windowMs) / limit;
    const retryAfterMs = settleRetry(this, now, cost, estimate);
    return deny('rate', retryAfterMs, whole(tokens), wholeMs(this.debtAt(now)), limit);
  }

  isAtRest(now: number): boolean {
    return this.debtAt(now) === 0;
  }

  restsAt(now: number): number {
    return now + this.debtAt(now);
  }

  lowerRemaining(now: number, remaining: number): void {
    if (this.tokensAt(now) <= remaining) return;
    const { limit, windowMs, capacity } = this.policy;
    this.ahead = ((capacity - remaining) * windowMs) / limit;
    if (now > this.stamp) this.stamp = now;
  }
}
