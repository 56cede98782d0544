import { type Policy, type ResolvedPolicy, resolvePolicy } from '../policy.js';
import { ArrivalSafe } from './arrival-safe.js';
import { FixedWindow } from './fixed-window.js';
import { Gcra } from './gcra.js';
import { SlidingLog } from './sliding-log.js';
import { SlidingWindow } from './sliding-window.js';
import type { Strategy } from './strategy.js';
import { TokenBucket } from './token-bucket.js';

export { AllOf } from './all-of.js';
export type { Strategy } from './strategy.js';
export { ArrivalSafe, FixedWindow, Gcra, SlidingLog, SlidingWindow, TokenBucket };

/**
 * A fresh, at-rest state for a policy that `resolvePolicy` has already checked. A `switch`, not a
 * table of classes: a new key's state is made here, and `new` of a class looked up by a string
 * key is measurably slower than `new` of a known class.
 */
export function strategyFor(policy: ResolvedPolicy): Strategy {
  switch (policy.algorithm) {
    case 'token-bucket':
    case 'gcra':
      return new TokenBucket(policy);
    case 'sliding-log':
      return new SlidingLog(policy);
    case 'sliding-window':
      return new SlidingWindow(policy);
    case 'fixed-window':
      return new FixedWindow(policy);
    case 'arrival-safe':
      return new ArrivalSafe(policy);
  }
}

/**
 * One unkeyed limiter state for a policy, for callers that keep their own keys (or have none).
 * Time passed to it must not decrease. `createStrategy(perSecond(5)).tryAcquire(now, 1)`
 */
export function createStrategy(policy: Policy): Strategy {
  return strategyFor(resolvePolicy(policy));
}
