import type { Strategy } from './algorithms/strategy.js';
import { type Clock, MonotonicClock } from './clock.js';
import {
  type CompiledPolicy,
  compilePolicy,
  type PolicyInput,
  type PolicyResolver,
  type PolicySummary,
  policyResolver,
  type UnitsCompiler,
} from './compile.js';
import { type Decision, deny, wholeMs } from './decision.js';
import type { ServerFeedback } from './feedback.js';
import type { LearnedPolicy } from './learned.js';
import { IncrementalSweep } from './sweep.js';
import type { UnitLimitsPart } from './unit-limits.js';
import type { Cost, UnitCosts } from './units.js';
import {
  assertBound,
  assertKey,
  assertKnownOptions,
  assertPositiveInteger,
  describe,
  fail,
} from './validate.js';

export type { PolicyInput, PolicyResolver, PolicySummary } from './compile.js';
export type { LearnedPolicy, LearnedSource } from './learned.js';
export type { ServerQuota, ServerSignal } from './signal.js';

export interface RateLimiterOptions {
  /** The policy of every key, or a function of the key (called once per new key state). */
  readonly limits: PolicyInput | PolicyResolver;
  /**
   * Most keys with live state at once. A new key beyond it is denied with
   * `reason: 'key-limit'` once no idle key can be dropped; a busy key is never evicted.
   * @default Infinity
   */
  readonly maxKeys?: number;
  /**
   * Where the time is read: monotonic ms from `now()`. @default performance (the one there is
   * when the limiter is made: fakes installed later need `{ now: () => performance.now() }`)
   */
  readonly clock?: Clock;
}

/**
 * A keyed rate limiter: one state per key (per user, per origin, per API token), each counted
 * under its policy. Pure and synchronous: it reads the ticker once per decision and never sets
 * a timer. Made by `createRateLimiter`.
 *
 * Keys whose state is at rest (identical to a fresh one) are dropped by an incremental sweep
 * that runs as new keys arrive, so millions of distinct keys over an app's life stay bounded
 * by how many are busy at once, without anyone calling `evictIdle()`.
 */
export interface RateLimiter {
  /** Keys with live state. */
  readonly size: number;
  /** Decides for `key` and, when allowed, takes `cost` permits. Throws if `cost` can never fit. */
  tryAcquire(key: string, cost?: number): Decision;
  /** What `tryAcquire(key, cost)` would answer now, changing nothing. */
  peek(key: string, cost?: number): Decision;
  /**
   * `cost` permits of `key` taken earlier were answered now: an `arrival-safe` policy counts
   * them from here for one window (the other algorithms counted them at the take and ignore
   * this). Call it when the response of a request arrives.
   */
  settle(key: string, cost?: number): void;
  /**
   * Permits available to `key` now as a float, partly refilled credit included (for gauges and
   * animations); a key without state has its full capacity.
   */
  level(key: string): number;
  /** What `key`'s policy allows (capacity, limit, sustained rate), without creating state. */
  policyOf(key: string): PolicySummary;
  /** Forgets `key`'s state, or every key's when called without one. */
  reset(key?: string): void;
  /** Drops every key at rest; returns how many keys were dropped. */
  evictIdle(): number;
}

/**
 * The optional parts of a limiter, as imported values so that a bundle carries only the parts
 * it uses: `createRateLimiter` has none; a pacer's limiter (pacer-limiter.ts) has both.
 */
export interface LimiterParts {
  /** Limits per unit (`unitLimits`, unit-limits.ts). */
  readonly units?: UnitLimitsPart;
  /** The server's blocks and what its answers teach (`serverFeedback`, feedback.ts). */
  readonly feedback?: (limiter: KeyedLimiter, maxKeys: number) => ServerFeedback;
}

/**
 * The keyed limiter behind `RateLimiter`, with the seams a pacer's limiter plugs its parts into
 * (`LimiterParts`): a cost may then be amounts per unit, and the server's blocks deny.
 */
export class KeyedLimiter implements RateLimiter {
  private readonly states = new Map<string, Strategy>();
  readonly compiled: (key: string) => CompiledPolicy;
  readonly maxKeys: number;
  private readonly clock: MonotonicClock;
  /** Drops keys at rest as new keys arrive (sweep.ts). */
  private readonly sweep = new IncrementalSweep(this.states, (state: Strategy, now) =>
    state.isAtRest(now),
  );
  /** No state rests before this (valid until a state is created); spares futile sweeps. */
  private noRestBefore = Number.NEGATIVE_INFINITY;
  /**
   * Whether a key's state counts permits until their answer (`settle`): once one does, the
   * pacer tells the limiter of every task's end. Never turns back to false.
   */
  settles = false;
  /**
   * Set by a pacer that settles every permit it takes when its task ends: learned windows then
   * count arrival-safe too. A bare limiter's caller is not assumed to.
   */
  answered = false;
  /**
   * Set by a pacer whose store learns one rate for every client from bare refusals
   * (`Store.pacesRefusals`): the keys then learn no AIMD rate of their own.
   */
  sharesRates = false;
  /** The server's blocks and what it taught, for a pacer's limiter (undefined: none). */
  readonly feedback: ServerFeedback | undefined;
  readonly units: UnitLimitsPart | undefined;

  constructor(options: RateLimiterOptions, parts: LimiterParts = {}) {
    if (typeof options !== 'object' || options === null) {
      throw new TypeError(
        `[fetch-pacer] Expected createRateLimiter() options \`{ limits }\`, got ${describe(options)}`,
      );
    }
    assertKnownOptions('createRateLimiter()', options, ['limits', 'maxKeys', 'clock']);
    const { limits, maxKeys = Number.POSITIVE_INFINITY, clock } = options;
    assertBound('maxKeys', maxKeys);
    if (clock !== undefined && typeof (clock as Partial<Clock> | null)?.now !== 'function') {
      fail(
        'clock',
        'an object with `now()`, such as `performance` or a ManualClock',
        clock,
        TypeError,
      );
    }
    this.maxKeys = maxKeys;
    this.clock = new MonotonicClock(clock);
    this.units = parts.units;
    this.compiled = policyResolver(limits, 'limits', undefined, parts.units?.compile);
    this.feedback = parts.feedback?.(this, maxKeys);
  }

  /**
   * The limiter's time base: its clock, clamped (`MonotonicClock`), so time never runs backwards
   * here and a reading of NaN or ±Infinity is ignored. Blocks take times of it.
   */
  now(): number {
    return this.clock.now();
  }

  get size(): number {
    return this.states.size;
  }

  tryAcquire(key: string, cost: Cost = 1): Decision {
    // The usual call in a method small enough to inline: the rest of the path, rarely taken,
    // would keep it from that.
    const state = this.usualState(key, cost);
    return state === undefined ? this.acquire(key, cost) : state.tryAcquire(this.now(), 1);
  }

  /**
   * The state of `key` when the call is the usual one, which the state decides alone: the key
   * has a state, the cost is 1 and no server block is kept. Undefined otherwise.
   */
  private usualState(key: string, cost: Cost): Strategy | undefined {
    if (cost !== 1 || (this.feedback !== undefined && this.feedback.blocking !== 0)) {
      return undefined;
    }
    return this.states.get(key);
  }

  /** `tryAcquire`, every case. */
  private acquire(key: string, cost: Cost): Decision {
    // One comparison on the usual path (a cost of 1), as before there were units.
    if (cost !== 1) {
      if (typeof cost === 'object') return this.decideUnits(key, cost, true);
      assertPositiveInteger('cost', cost);
    }
    const now = this.now();
    let state = this.states.get(key);
    const { feedback } = this;
    if (state === undefined) {
      const compiled = this.compiledFor(key, cost);
      const blocked = feedback?.blocked(key, now, cost, undefined, compiled.limit);
      if (blocked !== undefined) return blocked;
      if (!this.roomFor(now)) return this.keyLimitDecision(now, compiled.limit);
      state = this.add(key, compiled, now);
    } else {
      if (cost > state.capacity) throw costError(cost, state.capacity);
      if (feedback !== undefined && feedback.blocking !== 0) {
        const blocked = feedback.blocked(key, now, cost, state, 0);
        if (blocked !== undefined) return blocked;
      }
    }
    return state.tryAcquire(now, cost);
  }

  /**
   * `tryAcquire` for a caller that needs only the denials: `undefined` when the permits were
   * taken, else the denial. On the usual call to a state that can `take` (a token bucket's) no
   * Decision is made for a take. The pacer's path, where a task starts or waits.
   */
  tryTake(key: string, cost: Cost = 1): Decision | undefined {
    const state = this.usualState(key, cost);
    if (state?.take !== undefined) {
      const now = this.now();
      // A denial changes nothing, so asking for its reason at the same time decides the same.
      return state.take(now, 1) ? undefined : state.tryAcquire(now, 1);
    }
    const decision = this.acquire(key, cost);
    return decision.allowed ? undefined : decision;
  }

  peek(key: string, cost: Cost = 1): Decision {
    if (cost !== 1) {
      if (typeof cost === 'object') return this.decideUnits(key, cost, false);
      assertPositiveInteger('cost', cost);
    }
    const now = this.now();
    const state = this.states.get(key);
    const { feedback } = this;
    if (state !== undefined) {
      if (cost > state.capacity) throw costError(cost, state.capacity);
      return feedback?.blocked(key, now, cost, state, 0) ?? state.peek(now, cost);
    }
    const compiled = this.compiledFor(key, cost);
    const blocked = feedback?.blocked(key, now, cost, undefined, compiled.limit);
    if (blocked !== undefined) return blocked;
    if (this.states.size >= this.maxKeys && !this.anyAtRest(now)) {
      return this.keyLimitDecision(now, compiled.limit);
    }
    return compiled.create().peek(now, cost);
  }

  /**
   * The pacer reached a due request of `key` `lateMs` after its due time: a spacing policy grants
   * the credit of that time (see `Strategy.catchUp`).
   */
  catchUp(key: string, lateMs: number): void {
    this.states.get(key)?.catchUp?.(this.now(), lateMs);
  }

  settle(key: string, cost: Cost = 1): void {
    const state = this.states.get(key);
    if (state?.settle === undefined) return;
    if (typeof cost === 'number') state.settle(this.now(), cost);
    else this.units?.settle(state, this.now(), cost);
    // It may rest sooner now.
    this.noRestBefore = Number.NEGATIVE_INFINITY;
  }

  level(key: string): number {
    const state = this.states.get(key);
    if (state !== undefined) return state.level(this.now());
    assertKey(key);
    return this.compiled(key).create().level(this.now());
  }

  /**
   * What `key`'s policy allows and, on a pacer's limiter, the policy it learned (`learned`),
   * which counts in the tightest figures. With a policy function, it is asked again.
   */
  policyOf(key: string): PolicySummary & { readonly learned?: LearnedPolicy } {
    assertKey(key);
    const { capacity, limit, ratePerMs } = this.compiled(key);
    const summary = { capacity, limit, ratePerMs };
    return this.feedback?.summarize(summary, this.states.get(key)) ?? summary;
  }

  reset(key?: string): void {
    if (key === undefined) {
      this.states.clear();
      this.sweep.restart();
      this.noRestBefore = Number.NEGATIVE_INFINITY;
    } else this.states.delete(key);
    this.feedback?.reset(key);
  }

  evictIdle(): number {
    return this.sweepAll(this.now());
  }

  /** `tryAcquire` (`take`) or `peek` with amounts per unit: the units part decides. */
  private decideUnits(key: string, costs: UnitCosts, take: boolean): Decision {
    if (this.units === undefined) {
      throw new TypeError(
        `[fetch-pacer] Expected \`cost\` to be a positive integer, got ${describe(costs)}`,
      );
    }
    return this.units.decide(this, key, costs, take);
  }

  /** Makes the state of a new `key` (room for it was checked) and keeps it. */
  add(key: string, compiled: CompiledPolicy, now: number): Strategy {
    const state = compiled.create();
    this.sweep.step(now);
    this.replace(key, state);
    return state;
  }

  // What the parts (feedback.ts, unit-limits.ts) use of the keys.

  /** The state of `key`, if it has one. */
  stateOf(key: string): Strategy | undefined {
    return this.states.get(key);
  }

  /** The state of `key`, made if it has none and there is room for it (`undefined` if not). */
  stateFor(key: string, now: number): Strategy | undefined {
    const state = this.states.get(key);
    if (state !== undefined) return state;
    return this.roomFor(now) ? this.add(key, this.compiled(key), now) : undefined;
  }

  /** Puts `state` in place of `key`'s (it may rest sooner or later now). */
  replace(key: string, state: Strategy): void {
    if (state.settle !== undefined) this.settles = true;
    this.states.set(key, state);
    this.noRestBefore = Number.NEGATIVE_INFINITY;
  }

  private compiledFor(key: string, cost: number): CompiledPolicy {
    assertKey(key);
    const compiled = this.compiled(key);
    if (cost > compiled.capacity) throw costError(cost, compiled.capacity);
    return compiled;
  }

  /** The denial of a new key beyond `maxKeys`. */
  keyLimitDecision(now: number, limit: number): Decision {
    const wait = Math.max(1, wholeMs(this.noRestBefore - now));
    return deny('key-limit', wait, 0, wait, limit);
  }

  /**
   * Whether a new key can get a state now: below `maxKeys`, or at the bound once the keys at
   * rest are dropped (if any can be at rest yet).
   */
  roomFor(now: number): boolean {
    if (this.states.size < this.maxKeys) return true;
    if (now >= this.noRestBefore) this.sweepAll(now);
    return this.states.size < this.maxKeys;
  }

  /** Whether a key at rest could be dropped now to make room (nothing is dropped). */
  anyAtRest(now: number): boolean {
    if (now < this.noRestBefore) return false;
    for (const state of this.states.values()) if (state.isAtRest(now)) return true;
    return false;
  }

  private sweepAll(now: number): number {
    let dropped = 0;
    let earliest = Number.POSITIVE_INFINITY;
    for (const [key, state] of this.states) {
      if (state.isAtRest(now)) {
        this.states.delete(key);
        dropped++;
      } else {
        const at = state.restsAt(now);
        if (at < earliest) earliest = at;
      }
    }
    this.feedback?.sweep(now);
    this.noRestBefore = earliest;
    this.sweep.restart();
    return dropped;
  }
}

/** A keyed rate limiter (see `RateLimiter`). */
export function createRateLimiter(options: RateLimiterOptions): RateLimiter {
  return new KeyedLimiter(options);
}

export function costError(cost: number, capacity: number): RangeError {
  return new RangeError(
    `[fetch-pacer] A cost of ${cost} can never be allowed: the policy holds at most ${capacity} permits at once. Raise \`burst\` or \`limit\`, or split the request.`,
  );
}

/**
 * Validates a policy input and says what it allows, naming `field` in errors (the pacer calls
 * its option `limits`).
 */
export function summarizePolicy(
  input: PolicyInput,
  field: string,
  units?: UnitsCompiler,
): PolicySummary {
  const { capacity, limit, ratePerMs } = compilePolicy(input, field, units);
  return { capacity, limit, ratePerMs };
}
