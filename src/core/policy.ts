import type { Strategy } from './algorithms/strategy.js';
import { tokenBucket } from './algorithms/token-bucket.js';
import {
  assertKnownOptions,
  assertPositiveFinite,
  assertPositiveInteger,
  describe,
  fail,
} from './validate.js';

/** An algorithm's name: what stores (and the Redis script) keep and check, and messages show. */
export type AlgorithmName =
  | 'token-bucket'
  | 'sliding-log'
  | 'sliding-window'
  | 'fixed-window'
  | 'gcra'
  | 'arrival-safe';

/**
 * How a policy counts: one of the values `tokenBucket` (the default), `gcra`, `slidingLog`,
 * `slidingWindow`, `fixedWindow` and `arrivalSafe`, imported from 'fetch-pacer'
 * (`perSecond(10, { algorithm: slidingLog })`). A value, not a string, so that a bundle holds
 * only the algorithms an app names. See docs/rate-limiter.md for the trade-offs of each.
 */
export interface Algorithm {
  /** Its name, as a store reads it. */
  readonly name: AlgorithmName;
  /**
   * What a policy's `burst` means with it:
   * - `'capacity'`: the most permits at once (`tokenBucket`, `gcra`);
   * - `'spacing'`: bursts of that many at any time, at most `limit`, spaced between
   *   (`arrivalSafe`; its capacity stays `limit`);
   * - absent: it takes no `burst` (the window algorithms count whole windows: their burst is
   *   their limit).
   */
  readonly burst?: 'capacity' | 'spacing';
  /** A fresh, at-rest state of one key under `policy` (a policy resolved with this algorithm). */
  create(policy: ResolvedPolicy): Strategy;
}

/** "`limit` requests per `windowMs`", counted by `algorithm`. */
export interface Policy {
  /** Permits per window: a positive integer. */
  readonly limit: number;
  /** The window in ms: a finite number > 0. */
  readonly windowMs: number;
  /**
   * How to count: an algorithm value such as `slidingLog` (`import { slidingLog } from
   * 'fetch-pacer'`).
   * @default tokenBucket
   */
  readonly algorithm?: Algorithm;
  /**
   * Most permits available at once, for `tokenBucket` and `gcra` (the window algorithms count
   * whole windows, so their burst is the limit). For `arrivalSafe`, the server allows bursts of
   * this many at any time (at most `limit`); without it only the first window is sent at once.
   * A positive integer.
   * @default limit
   */
  readonly burst?: number;
}

/** The options the `perSecond`/`perMinute`/`perHour`/`perDay` helpers take besides the limit. */
export interface PolicyOptions {
  /**
   * How to count: an algorithm value such as `slidingLog` (`import { slidingLog } from
   * 'fetch-pacer'`).
   * @default tokenBucket
   */
  readonly algorithm?: Algorithm;
  /** @default limit */
  readonly burst?: number;
}

/** A validated policy with every default filled in. Frozen; shared by all keys that use it. */
export interface ResolvedPolicy {
  readonly limit: number;
  readonly windowMs: number;
  /** The algorithm's name: what a store keeps and checks (`counting.name`). */
  readonly algorithm: AlgorithmName;
  /** The algorithm itself: `counting.create(policy)` makes a key's state. */
  readonly counting: Algorithm;
  /** Most permits one request (or a burst) can take: `burst ?? limit` (`arrivalSafe`: `limit`). */
  readonly capacity: number;
  /** `arrivalSafe` only: the `burst` given, if any (its capacity stays `limit`). */
  readonly burst?: number;
}

const POLICY_FIELDS = ['limit', 'windowMs', 'algorithm', 'burst'];

/** Every algorithm's name, to tell an algorithm value from anything else without importing it. */
const NAMES: readonly string[] = [
  'token-bucket',
  'gcra',
  'sliding-log',
  'sliding-window',
  'fixed-window',
  'arrival-safe',
];

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
  const { limit, windowMs, algorithm: counting = tokenBucket, burst } = policy;
  assertPositiveInteger(name('limit'), limit);
  assertPositiveFinite(name('windowMs'), windowMs);
  assertAlgorithm(name('algorithm'), counting);
  const algorithm = counting.name;
  const resolved = { limit, windowMs, algorithm, counting, capacity: limit };
  if (burst === undefined) return Object.freeze(resolved);
  if (counting.burst === undefined) {
    throw new TypeError(
      `[fetch-pacer] \`${name('burst')}\` applies only to \`tokenBucket\`, \`gcra\` and \`arrivalSafe\`, got ${describe(burst)} with \`${valueName(algorithm)}\` (its burst is its limit)`,
    );
  }
  assertPositiveInteger(name('burst'), burst);
  if (counting.burst === 'capacity') return Object.freeze({ ...resolved, capacity: burst });
  if (burst > limit) {
    fail(
      name('burst'),
      `at most \`limit\` (${limit}) with \`${valueName(algorithm)}\``,
      burst,
      RangeError,
    );
  }
  return Object.freeze({ ...resolved, burst });
}

/**
 * Throws a TypeError unless `value` is an algorithm value: told by its shape (a known name and a
 * `create`), not by identity, so that the values of two copies of the package in one app both
 * work. A string (an algorithm's name, the form before the values) is told which value to import.
 */
function assertAlgorithm(field: string, value: unknown): asserts value is Algorithm {
  const { name, create } = Object(value) as Partial<Algorithm>;
  if (isName(name) && typeof create === 'function') return;
  const suggested = isName(value) ? valueName(value) : 'tokenBucket';
  fail(
    field,
    `an algorithm value such as \`${suggested}\` (import { ${suggested} } from 'fetch-pacer')`,
    value,
    TypeError,
  );
}

function isName(value: unknown): value is AlgorithmName {
  return typeof value === 'string' && NAMES.includes(value);
}

/** The exported name of an algorithm's value, for messages: 'sliding-log' is `slidingLog`. */
export function valueName(name: string): string {
  return name.replace(/-(\w)/g, (_, letter: string) => letter.toUpperCase());
}

/** The longest window of `policies` (ms; 0 for none). */
export function longestWindow(policies: readonly { readonly windowMs: number }[]): number {
  let longest = 0;
  for (const { windowMs } of policies) if (windowMs > longest) longest = windowMs;
  return longest;
}
