import { type Policy, type ResolvedPolicy, resolvePolicy } from '../policy.js';
import type { Strategy } from './strategy.js';

export { AllOf } from './all-of.js';
export type { Strategy } from './strategy.js';

/**
 * A fresh, at-rest state for a policy that `resolvePolicy` has already checked, made by its
 * algorithm's value. Not a `switch` over every class: that put all of them in every bundle.
 */
export function strategyFor(policy: ResolvedPolicy): Strategy {
  return policy.counting.create(policy);
}

/**
 * One unkeyed limiter state for a policy, for callers that keep their own keys (or have none).
 * Time passed to it must not decrease. `createStrategy(perSecond(5)).tryAcquire(now, 1)`
 */
export function createStrategy(policy: Policy): Strategy {
  return strategyFor(resolvePolicy(policy));
}
