import type { Decision } from '../core/decision.js';
import { RateLimiter } from '../core/limiter.js';
import type { Policy, ResolvedPolicy } from '../core/policy.js';

type Limits = readonly ResolvedPolicy[];

/**
 * Counting in this process alone, with the core's limiter: what a shared store falls back to
 * when it cannot share (a browser without Web Locks or IndexedDB; Redis out, with
 * `onError: 'fail-open'`). One limiter per policy, each with the same policy as the shared
 * bucket, so a process alone keeps to the limit; several processes together do not.
 */
export class LocalLimits {
  /** Per policy: a pacer's limits come as one frozen array per policy, so these are few. */
  private readonly limiters = new Map<Limits, RateLimiter>();
  /** Blocks heard while counting locally, applied to every limiter made later too. */
  private readonly blocks = new Map<string, number>();

  constructor(private readonly clock: () => number = () => performance.now()) {}

  takeMany(key: string, costs: readonly number[], stopAtDenial: boolean, limits: Limits) {
    const limiter = this.limiterFor(limits);
    const decisions: Decision[] = [];
    for (const cost of costs) {
      const decision = limiter.tryAcquire(key, cost);
      decisions.push(decision);
      if (stopAtDenial && !decision.allowed) break;
    }
    return decisions;
  }

  peek(key: string, cost: number, limits: Limits): Decision {
    return this.limiterFor(limits).peek(key, cost);
  }

  block(key: string, ms: number, limits: Limits): void {
    const until = this.clock() + ms;
    if (until > (this.blocks.get(key) ?? Number.NEGATIVE_INFINITY)) this.blocks.set(key, until);
    this.limiterFor(limits).blockUntil(key, until);
  }

  lower(key: string, remaining: number, limits: Limits): void {
    this.limiterFor(limits).observe(key, { remaining });
  }

  reset(key: string): void {
    this.blocks.delete(key);
    for (const limiter of this.limiters.values()) limiter.reset(key);
  }

  private limiterFor(limits: Limits): RateLimiter {
    let limiter = this.limiters.get(limits);
    if (limiter === undefined) {
      limiter = new RateLimiter({ policy: limits.map(asPolicy), clock: this.clock });
      for (const [key, until] of this.blocks) limiter.blockUntil(key, until);
      this.limiters.set(limits, limiter);
    }
    return limiter;
  }
}

function asPolicy({ limit, windowMs, algorithm, capacity }: ResolvedPolicy): Policy {
  const burstable = algorithm === 'token-bucket' || algorithm === 'gcra';
  return burstable && capacity !== limit
    ? { limit, windowMs, algorithm, burst: capacity }
    : { limit, windowMs, algorithm };
}
