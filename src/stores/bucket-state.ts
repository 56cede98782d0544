import { combine } from '../core/algorithms/all-of.js';
import { type Admits, settleRetry } from '../core/algorithms/strategy.js';
import { whole } from '../core/algorithms/token-bucket.js';
import { allow, type Decision, deny, EPSILON, wholeMs } from '../core/decision.js';
import type { ResolvedPolicy } from '../core/policy.js';
import { type ServerSignal, serverDelay } from '../core/signal.js';

/**
 * One key's state in a shared store, as plain numbers that survive a structured clone (IndexedDB)
 * or a string (Redis): per policy a stamp and a value (tokens for a token bucket, ms of debt for
 * GCRA; the core keeps both as its TokenBucket, which admits exactly what GCRA does), plus a
 * server block. Time is the store's shared clock, in ms.
 *
 * Stamps are absolute (near 1.7e12 for an epoch-based clock) but every computation uses
 * differences of them and keeps the value small (tokens, or ms of debt ahead of the stamp):
 * an absolute GCRA arrival time would lose a few 1e-4 ms to rounding at each permit there, more
 * than the permits' tolerance. The decisions are the core's: property-tested against it.
 */
export interface BucketState {
  /** Per policy, in the order of the limits: shared-clock ms of its last change. */
  readonly stamps: number[];
  /** Per policy: tokens (token bucket) or ms of debt ahead of the stamp (gcra). */
  readonly values: number[];
  /** Shared-clock ms until which the server blocked the key; 0 when never. */
  blockedUntil: number;
}

type Limits = readonly ResolvedPolicy[];

const SHARED: ReadonlySet<string> = new Set(['token-bucket', 'gcra']);

/**
 * Throws a TypeError unless every policy is a token bucket or GCRA: the algorithms whose state
 * is two numbers, cheap to share. The window algorithms keep logs or counters per window.
 */
export function assertShareable(limits: Limits, store: string): void {
  for (const policy of limits) {
    if (!SHARED.has(policy.algorithm)) {
      throw new TypeError(
        `[fetch-pacer] ${store} counts with 'token-bucket' or 'gcra', got '${policy.algorithm}'. Use one of those (a token bucket of the same limit and window is the closest), or the in-memory store.`,
      );
    }
  }
}

/** A state for `limits` read back from storage: missing or malformed parts start fresh. */
export function normalize(raw: unknown, limits: Limits, now: number): BucketState {
  const found = (typeof raw === 'object' && raw !== null ? raw : {}) as Partial<BucketState>;
  const stamps: number[] = [];
  const values: number[] = [];
  limits.forEach((policy, index) => {
    const stamp = found.stamps?.[index];
    const value = found.values?.[index];
    const ok = typeof stamp === 'number' && typeof value === 'number';
    stamps.push(ok && Number.isFinite(stamp) ? stamp : now);
    values.push(ok && Number.isFinite(value) ? value : fresh(policy));
  });
  const blockedUntil = typeof found.blockedUntil === 'number' ? found.blockedUntil : 0;
  return { stamps, values, blockedUntil: Number.isFinite(blockedUntil) ? blockedUntil : 0 };
}

function fresh(policy: ResolvedPolicy): number {
  return policy.algorithm === 'gcra' ? 0 : policy.capacity;
}

/** One policy of a state, with the core's admission test for `settleRetry`. */
class Part implements Admits {
  constructor(
    private readonly policy: ResolvedPolicy,
    private readonly state: BucketState,
    private readonly index: number,
  ) {}

  private get stamp(): number {
    return this.state.stamps[this.index] as number;
  }

  private get value(): number {
    return this.state.values[this.index] as number;
  }

  /** GCRA: ms of debt at `at`, never negative. */
  debtAt(at: number): number {
    const elapsed = at - this.stamp;
    const ahead = this.value;
    if (!(elapsed > 0)) return ahead;
    return ahead > elapsed ? ahead - elapsed : 0;
  }

  tokensAt(at: number): number {
    const { limit, windowMs, capacity } = this.policy;
    if (this.policy.algorithm === 'gcra') return capacity - (this.debtAt(at) * limit) / windowMs;
    const elapsed = at - this.stamp;
    if (!(elapsed > 0)) return this.value;
    const refilled = this.value + (elapsed * limit) / windowMs;
    return refilled < capacity ? refilled : capacity;
  }

  fits(at: number, cost: number): boolean {
    return this.tokensAt(at) >= cost - EPSILON;
  }

  /** The decision at `now`; with `take`, an allowed one is written to the state. */
  decide(now: number, cost: number, take: boolean): Decision {
    const { limit, windowMs, capacity, algorithm } = this.policy;
    const tokens = this.tokensAt(now);
    const gcra = algorithm === 'gcra';
    if (tokens < cost - EPSILON) {
      const retryAfterMs = settleRetry(this, now, cost, ((cost - tokens) * windowMs) / limit);
      const resetMs = gcra
        ? wholeMs(this.debtAt(now))
        : wholeMs(((capacity - tokens) * windowMs) / limit);
      return deny('rate', retryAfterMs, whole(tokens), resetMs, limit);
    }
    const after = gcra ? this.debtAt(now) + (cost * windowMs) / limit : tokens - cost;
    if (take) {
      this.state.values[this.index] = after;
      if (now > this.stamp) this.state.stamps[this.index] = now;
    }
    const resetMs = gcra ? wholeMs(after) : wholeMs(((capacity - after) * windowMs) / limit);
    return allow(whole(tokens - cost), resetMs, limit);
  }

  restsAt(now: number): number {
    const { limit, windowMs, capacity, algorithm } = this.policy;
    if (algorithm === 'gcra') return now + this.debtAt(now);
    const tokens = this.tokensAt(now);
    return tokens >= capacity ? now : now + ((capacity - tokens) * windowMs) / limit;
  }

  lower(now: number, remaining: number): void {
    if (this.tokensAt(now) <= remaining) return;
    const { limit, windowMs, capacity, algorithm } = this.policy;
    this.state.values[this.index] =
      algorithm === 'gcra' ? ((capacity - remaining) * windowMs) / limit : remaining;
    if (now > this.stamp) this.state.stamps[this.index] = now;
  }
}

function parts(state: BucketState, limits: Limits): Part[] {
  return limits.map((policy, index) => new Part(policy, state, index));
}

/** What a request of `cost` gets at `now`, all policies together; with `take`, it is charged. */
function decideAll(all: readonly Part[], now: number, cost: number, take: boolean): Decision {
  if (all.length === 1) return (all[0] as Part).decide(now, cost, take);
  const peeks = all.map((part) => part.decide(now, cost, false));
  const verdict = combine(peeks);
  if (!verdict.allowed || !take) return verdict;
  return combine(all.map((part) => part.decide(now, cost, true)));
}

/** The core's 'blocked' denial: wait for the block, and past it for the key's own policy too. */
function blockedDecision(all: readonly Part[], state: BucketState, now: number, cost: number) {
  const until = state.blockedUntil;
  if (!(now < until)) return undefined;
  let wait = wholeMs(until - now);
  if (now + wait < until) wait++;
  const rate = decideAll(all, now, cost, false);
  return deny(
    'blocked',
    Math.max(wait, rate.retryAfterMs),
    0,
    Math.max(wait, rate.resetMs),
    rate.limit,
  );
}

/**
 * Decides `costs` in order at `now`, charging the allowed ones to `state` (a denial changes
 * nothing). With `stopAtDenial` it returns the decisions up to and including the first denial.
 */
export function decide(
  state: BucketState,
  limits: Limits,
  now: number,
  costs: readonly number[],
  stopAtDenial: boolean,
): Decision[] {
  const all = parts(state, limits);
  const capacity = Math.min(...limits.map((policy) => policy.capacity));
  const decisions: Decision[] = [];
  for (const cost of costs) {
    if (cost > capacity) {
      throw new RangeError(
        `[fetch-pacer] A cost of ${cost} can never be allowed: the policy holds at most ${capacity} permits at once.`,
      );
    }
    const decision = blockedDecision(all, state, now, cost) ?? decideAll(all, now, cost, true);
    decisions.push(decision);
    if (stopAtDenial && !decision.allowed) break;
  }
  return decisions;
}

/** What `decide` would answer for one request, changing nothing. */
export function peek(state: BucketState, limits: Limits, now: number, cost: number): Decision {
  const all = parts(state, limits);
  return blockedDecision(all, state, now, cost) ?? decideAll(all, now, cost, false);
}

/** Lowers every policy's credit to at most `remaining` (the server's count); never raises it. */
export function lower(state: BucketState, limits: Limits, now: number, remaining: number): void {
  for (const part of parts(state, limits)) part.lower(now, remaining);
}

/**
 * What a server signal does to a shared bucket: the count it lowers the credit to, and how long
 * it blocks the key (ms from now). A refusal without Retry-After says that nothing is left. A
 * learned policy, a probe and its answer are kept by each pacer for now (sharing them is the
 * learning issue's).
 */
export function effectOf(signal: ServerSignal): {
  readonly remaining: number | undefined;
  readonly blockMs: number;
} {
  if (signal.kind === 'refusal') {
    const wait = serverDelay(signal.retryAfterMs);
    return wait === undefined
      ? { remaining: 0, blockMs: 0 }
      : { remaining: undefined, blockMs: wait };
  }
  if (signal.kind !== 'quota' && signal.kind !== 'policy')
    return { remaining: undefined, blockMs: 0 };
  const { remaining } = signal;
  const reset = serverDelay(signal.resetMs) ?? 0;
  return { remaining, blockMs: remaining === 0 ? reset : 0 };
}

/** Applies a server signal to `state` at `now` (shared ms), as `effectOf` says. */
export function observe(
  state: BucketState,
  limits: Limits,
  now: number,
  signal: ServerSignal,
): void {
  const { remaining, blockMs } = effectOf(signal);
  if (remaining !== undefined) lower(state, limits, now, remaining);
  if (blockMs > 0) block(state, now + blockMs);
}

/** Blocks the key until `until` (shared ms); a later block wins, none shortens another. */
export function block(state: BucketState, until: number): void {
  if (until > state.blockedUntil) state.blockedUntil = until;
}

/**
 * The shared time from which the state is identical to a fresh one (full, unblocked): a store
 * may forget the key then. `now` when it already is.
 */
export function restsAt(state: BucketState, limits: Limits, now: number): number {
  let at = state.blockedUntil > now ? state.blockedUntil : now;
  for (const part of parts(state, limits)) {
    const rests = part.restsAt(now);
    if (rests > at) at = rests;
  }
  return at;
}
