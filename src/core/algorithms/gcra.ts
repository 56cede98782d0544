import type { Algorithm, ResolvedPolicy } from '../policy.js';
import { TokenBucket } from './token-bucket.js';

/**
 * GCRA (the Generic Cell Rate Algorithm) admits exactly as a token bucket of the same rate and
 * burst: its theoretical arrival time (`tat`) is when the bucket would be full again, so
 * `tat - now` is the bucket's missing tokens, in ms. Its promise is one number of state, but as
 * one absolute double near a large ticker value `tat` loses precision (a few 1e-4 ms per permit
 * near 1.7e12 ms, more than the permits' tolerance), so it is kept as a stamp and an offset: two
 * numbers, as the bucket's stamp and tokens. In memory GCRA is therefore the token bucket itself
 * (the same class, not a subclass: a derived class costs each new key's state a `super` call),
 * the same decisions by construction. The shared stores keep a GCRA key as a stamp and its debt
 * (bucket-state.ts), and a property test holds their decisions equal to these.
 */
export const Gcra = TokenBucket;
export type Gcra = TokenBucket;

/**
 * GCRA: in memory the admissions of `tokenBucket` (above); a shared store keeps one number per
 * key. `burst` is its capacity, as the bucket's.
 */
export const gcra: Algorithm = /* @__PURE__ */ Object.freeze({
  name: 'gcra',
  burst: 'capacity',
  create: (policy: ResolvedPolicy) => new TokenBucket(policy),
});
