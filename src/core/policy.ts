import {
  assertKnownOptions,
  assertPositiveFinite,
  assertPositiveInteger,
  describe,
  fail,
} from './validate.js';

/** How a policy counts. See the README for the trade-offs of each. */
export type Algorithm =
  | 'token-bucket'
  | 'sliding-log'
  | 'sliding-window'
  | 'fixed-window'
  | 'gcra'
  | 'arrival-safe';

export const ALGORITHMS: readonly Algorithm[] = [
  'token-bucket',
  'sliding-log',
  'sliding-window',
  'fixed-window',
  'gcra',
  'arrival-safe',
];

/** "`limit` requests per `windowMs`", counted by `algorithm`. */
export interface Policy {
  /** Permits per window: a positive integer. */
  readonly limit: number;
  /** The window in ms: a finite number > 0. */
  readonly windowMs: number;
  /** @default 'token-bucket' */
  readonly algorithm?: Algorithm;
  /**
   * Most permits available at once, for `token-bucket` and `gcra` (the window algorithms count
   * whole windows, so their burst is the limit). For `arrival-safe`, the server allows bursts of
   * this many at any time (at most `limit`); without it only the first window is sent at once.
   * A positive integer.
   * @default limit
   */
  readonly burst?: number;
}

/** The options the `perSecond`/`perMinute`/`perHour`/`perDay` helpers take besides the limit. */
export interface PolicyOptions {
  /** @default 'token-bucket' */
  readonly algorithm?: Algorithm;
  /** @default limit */
  readonly burst?: number;
}

/** A validated policy with every default filled in. Frozen; shared by all keys that use it. */
export interface ResolvedPolicy {
  readonly limit: number;
  readonly windowMs: number;
  readonly algorithm: Algorithm;
  /** Most permits one request (or a burst) can take: `burst ?? limit` (`arrival-safe`: `limit`). */
  readonly capacity: number;
  /** `arrival-safe` only: the `burst` given, if any (its capacity stays `limit`). */
  readonly burst?: number;
}

const POLICY_FIELDS = ['limit', 'windowMs', 'algorithm', 'burst'];

/** The algorithms that take a `burst`; the others count whole windows. */
const BURSTABLE: readonly Algorithm[] = ['token-bucket', 'gcra', 'arrival-safe'];

// `@__PURE__`: a bundler may then drop the helpers an app does not use.
function per(windowMs: number) {
  return (limit: number, options: PolicyOptions = {}): Policy => {
    const policy: Policy = { limit, windowMs, ...options };
    resolvePolicy(policy);
    return policy;
  };
}

/** `limit` per second. `perSecond(10, { burst: 20 })` */
export const perSecond = /* @__PURE__ */ per(1_000);
/** `limit` per minute. */
export const perMinute = /* @__PURE__ */ per(60_000);
/** `limit` per hour. */
export const perHour = /* @__PURE__ */ per(3_600_000);
/** `limit` per day (24 h of the monotonic ticker, not calendar days). */
export const perDay = /* @__PURE__ */ per(86_400_000);

/**
 * Validates a policy and fills in its defaults. Throws a `RangeError` for a number out of range
 * and a `TypeError` for a value of the wrong type, naming the field: `field` prefixes the name
 * (`policy[1].limit`).
 */
export function resolvePolicy(policy: Policy, field = ''): ResolvedPolicy {
  if (typeof policy !== 'object' || policy === null || Array.isArray(policy)) {
    fail(
      field || 'policy',
      'a policy such as `perSecond(10)` or `{ limit, windowMs }`',
      policy,
      TypeError,
    );
  }
  assertKnownOptions(`a policy${field ? ` (\`${field}\`)` : ''}`, policy, POLICY_FIELDS);
  const name = (key: string) => (field ? `${field}.${key}` : key);
  const { limit, windowMs, algorithm = 'token-bucket', burst } = policy;
  assertPositiveInteger(name('limit'), limit);
  assertPositiveFinite(name('windowMs'), windowMs);
  if (!ALGORITHMS.includes(algorithm)) {
    fail(name('algorithm'), `one of '${ALGORITHMS.join("', '")}'`, algorithm, TypeError);
  }
  if (burst !== undefined) {
    if (!BURSTABLE.includes(algorithm)) {
      throw new TypeError(
        `[fetch-pacer] \`${name('burst')}\` applies only to 'token-bucket', 'gcra' and 'arrival-safe', got ${describe(burst)} with algorithm '${algorithm}' (its burst is its limit)`,
      );
    }
    assertPositiveInteger(name('burst'), burst);
    if (algorithm === 'arrival-safe' && burst > limit) {
      fail(name('burst'), `at most \`limit\` (${limit}) with 'arrival-safe'`, burst, RangeError);
    }
    if (algorithm === 'arrival-safe') {
      return Object.freeze({ limit, windowMs, algorithm, capacity: limit, burst });
    }
    return Object.freeze({ limit, windowMs, algorithm, capacity: burst });
  }
  return Object.freeze({ limit, windowMs, algorithm, capacity: limit });
}
