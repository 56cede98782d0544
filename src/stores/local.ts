import type { Decision } from '../core/decision.js';
import { RateLimiter } from '../core/limiter.js';
import type { Policy, ResolvedPolicy } from '../core/policy.js';
import type { ServerSignal } from '../core/signal.js';
import { effectOf } from './bucket-state.js';

type Limits = readonly ResolvedPolicy[];

/**
 * Counting in this process alone, with the core's limiter: what a shared store falls back to
 * when it cannot share (a browser without Web Locks or IndexedDB; Redis out, with
 * `onError: 'fail-open'`). One limiter, each key under the policies its calls come with, so a
 * process alone keeps to the limit; several processes together do not. Its server blocks are
 * the limiter's, kept once.
 */
export class LocalLimits {
  private readonly limiter: RateLimiter;
  /** The policies of the call under way: what a key that has no state yet is made with. */
  private current: readonly Policy[] = [];
  /** A pacer's limits come as one frozen array per policy: each is converted once. */
  private readonly converted = new WeakMap<Limits, readonly Policy[]>();

  constructor(clock: () => number = () => performance.now()) {
    this.limiter = new RateLimiter({ policy: () => this.current, clock });
  }

  takeMany(key: string, costs: readonly number[], stopAtDenial: boolean, limits: Limits) {
    this.use(limits);
    const decisions: Decision[] = [];
    for (const cost of costs) {
      const decision = this.limiter.tryAcquire(key, cost);
      decisions.push(decision);
      if (stopAtDenial && !decision.allowed) break;
    }
    return decisions;
  }

  peek(key: string, cost: number, limits: Limits): Decision {
    this.use(limits);
    return this.limiter.peek(key, cost);
  }

  block(key: string, ms: number): void {
    this.limiter.blockUntil(key, this.limiter.now() + ms);
  }

  /** As the shared bucket takes it (`effectOf`), so counting alone changes nothing of it. */
  observe(key: string, signal: ServerSignal, limits: Limits): void {
    this.use(limits);
    const { remaining, blockMs, learns } = effectOf(signal);
    if (learns !== undefined) this.limiter.observe(key, { kind: 'policy', ...learns });
    if (remaining !== undefined) this.limiter.observe(key, { kind: 'quota', remaining });
    if (blockMs > 0) this.block(key, blockMs);
  }

  reset(key: string): void {
    this.limiter.reset(key);
  }

  private use(limits: Limits): void {
    let policies = this.converted.get(limits);
    if (policies === undefined) {
      policies = limits.map(asPolicy);
      this.converted.set(limits, policies);
    }
    this.current = policies;
  }
}

function asPolicy({ limit, windowMs, algorithm, capacity }: ResolvedPolicy): Policy {
  const burstable = algorithm === 'token-bucket' || algorithm === 'gcra';
  return burstable && capacity !== limit
    ? { limit, windowMs, algorithm, burst: capacity }
    : { limit, windowMs, algorithm };
}
