import { allow, type Decision, deny, EPSILON, wholeMs } from '../decision.js';
import type { ResolvedPolicy } from '../policy.js';
import { type Admits, type Strategy, settleRetry } from './strategy.js';
import { whole } from './token-bucket.js';

/**
 * Generic Cell Rate Algorithm: the token bucket's admissions from one number, the theoretical
 * arrival time (`tat`): the ticker time at which the bucket would be full again. Each permit
 * pushes it `windowMs / limit` further; a request fits while the debt `tat - now` leaves room
 * for its cost within `capacity`. One number is what makes it cheap to store remotely.
 */
export class Gcra implements Strategy, Admits {
  private tat = Number.NEGATIVE_INFINITY;

  get capacity(): number {
    return this.policy.capacity;
  }

  constructor(readonly policy: ResolvedPolicy) {}

  /** Permits available at `now`: capacity minus the debt, in permits. */
  private tokensAt(now: number): number {
    const { limit, windowMs, capacity } = this.policy;
    return this.tat > now ? capacity - ((this.tat - now) * limit) / windowMs : capacity;
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
    this.tat = (this.tat > now ? this.tat : now) + (cost * windowMs) / limit;
    return allow(whole(tokens - cost), wholeMs(this.tat - now), limit);
  }

  peek(now: number, cost: number): Decision {
    const tokens = this.tokensAt(now);
    if (tokens < cost - EPSILON) return this.denial(now, cost, tokens);
    const { limit, windowMs } = this.policy;
    const tat = (this.tat > now ? this.tat : now) + (cost * windowMs) / limit;
    return allow(whole(tokens - cost), wholeMs(tat - now), limit);
  }

  private denial(now: number, cost: number, tokens: number): Decision {
    const { limit, windowMs } = this.policy;
    const estimate = ((cost - tokens) * windowMs) / limit;
    const retryAfterMs = settleRetry(this, now, cost, estimate);
    return deny('rate', retryAfterMs, whole(tokens), wholeMs(this.tat - now), limit);
  }

  isAtRest(now: number): boolean {
    return this.tat <= now;
  }

  restsAt(now: number): number {
    return this.tat > now ? this.tat : now;
  }

  lowerRemaining(now: number, remaining: number): void {
    if (this.tokensAt(now) <= remaining) return;
    const { limit, windowMs, capacity } = this.policy;
    this.tat = now + ((capacity - remaining) * windowMs) / limit;
  }
}
