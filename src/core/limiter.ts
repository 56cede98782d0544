import type { Strategy } from './algorithms/index.js';
import { ServerBlocks } from './blocks.js';
import { monotonic, performanceTicker, type Ticker } from './clock.js';
import {
  type CompiledPolicy,
  compilePolicy,
  type PolicyInput,
  type PolicyResolver,
  type PolicySummary,
  policyResolver,
} from './compile.js';
import { type Decision, deny, wholeMs } from './decision.js';
import {
  applySignal,
  WithLearned,
  type KeyStates,
  type LearnedPolicy,
  learnedCounterOf,
  learnedRatePerMs,
  learnedPolicyOf,
} from './learning.js';
import { assertSignal, type ServerSignal } from './signal.js';
import { IncrementalSweep } from './sweep.js';
import { Units } from './algorithms/units.js';
import {
  type Cost,
  inspectUnits,
  noUnitsError,
  statesOfUnit,
  type UnitCosts,
  type UnitInspection,
  unitVector,
} from './units.js';
import {
  assertBound,
  assertFiniteNumber,
  assertKey,
  assertKnownOptions,
  assertPositiveInteger,
  describe,
} from './validate.js';

export type { PolicyInput, PolicyResolver, PolicySummary } from './compile.js';
export type { LearnedPolicy, LearnedSource } from './learning.js';
export type { ServerQuota, ServerSignal } from './signal.js';

export interface RateLimiterOptions {
  /** The policy of every key, or a function of the key (called once per new key state). */
  readonly policy: PolicyInput | PolicyResolver;
  /**
   * Most keys with live state at once. A new key beyond it is denied with
   * `reason: 'key-limit'` once no idle key can be dropped; a busy key is never evicted.
   * @default Infinity
   */
  readonly maxKeys?: number;
  /** Monotonic ms. @default performance.now */
  readonly clock?: Ticker;
}

/**
 * A keyed rate limiter: one state per key (per user, per origin, per API token), each counted
 * under its policy. Pure and synchronous: it reads the ticker once per decision and never sets
 * a timer.
 *
 * Keys whose state is at rest (identical to a fresh one) are dropped by an incremental sweep
 * that runs as new keys arrive, so millions of distinct keys over an app's life stay bounded
 * by how many are busy at once, without anyone calling `evictIdle()`.
 */
export class RateLimiter {
  private readonly states = new Map<string, Strategy>();
  /** Ticker time until which a key is blocked by the server. Rarely non-empty. */
  private readonly blocks: ServerBlocks;
  private readonly compiled: (key: string) => CompiledPolicy;
  private readonly maxKeys: number;
  /**
   * The limiter's time base: its ticker, clamped (`monotonic`), so time never runs backwards
   * here and a reading of NaN or ±Infinity is ignored. `blockUntil` takes times of it.
   */
  readonly now: Ticker;
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

  constructor(options: RateLimiterOptions) {
    if (typeof options !== 'object' || options === null) {
      throw new TypeError(
        `[fetch-pacer] Expected RateLimiter options \`{ policy }\`, got ${describe(options)}`,
      );
    }
    assertKnownOptions('createRateLimiter()', options, ['policy', 'maxKeys', 'clock']);
    const { policy, maxKeys = Number.POSITIVE_INFINITY, clock = performanceTicker } = options;
    assertBound('maxKeys', maxKeys);
    if (typeof clock !== 'function') {
      throw new TypeError(
        `[fetch-pacer] Expected \`clock\` to be a function returning ms, got ${describe(clock)}`,
      );
    }
    this.maxKeys = maxKeys;
    this.now = monotonic(clock);
    this.blocks = new ServerBlocks(maxKeys);
    this.compiled = policyResolver(policy, 'policy');
  }

  /** Keys with live state. */
  get size(): number {
    return this.states.size;
  }

  /** Decides for `key` and, when allowed, takes `cost` permits. Throws if `cost` can never fit. */
  tryAcquire(key: string, cost: Cost = 1): Decision {
    // One comparison on the usual path (a cost of 1), as before there were units.
    if (cost !== 1) {
      if (typeof cost === 'object') return this.decideUnits(key, cost, true);
      assertPositiveInteger('cost', cost);
    }
    const now = this.now();
    let state = this.states.get(key);
    if (state === undefined) {
      const compiled = this.compiledFor(key, cost);
      const blocked = this.blockedDecision(key, now, cost, undefined, compiled.limit);
      if (blocked !== undefined) return blocked;
      if (this.states.size >= this.maxKeys && !this.makeRoom(now)) {
        return this.keyLimitDecision(now, compiled.limit);
      }
      state = compiled.create();
      if (state.settle !== undefined) this.settles = true;
      this.sweep.step(now);
      this.states.set(key, state);
      this.noRestBefore = Number.NEGATIVE_INFINITY;
    } else {
      if (cost > state.capacity) throw costError(cost, state.capacity);
      if (this.blocks.size !== 0) {
        const blocked = this.blockedDecision(key, now, cost, state, 0);
        if (blocked !== undefined) return blocked;
      }
    }
    return state.tryAcquire(now, cost);
  }

  /**
   * Takes `cost` permits of `key` from what it learned of the server alone (a slow start's
   * requests in flight, a rate AIMD learned), not from its own policy: for a pacer whose store
   * counts the policy for every client. Taken from both, the key's asks of the store were paced
   * a second time here, out of step with the store's grants, and each ask the store denied
   * spent a permit of its own: three processes on one store, one in a slow start asked 7-10 ms
   * after every permit freed and got none for 4 s. With nothing learned (or limits per
   * unit) it is `tryAcquire`. A server block denies, as there.
   */
  takeLearned(key: string, cost: Cost = 1): Decision {
    const state = this.states.get(key);
    if (typeof cost !== 'number' || !(state instanceof WithLearned)) {
      return this.tryAcquire(key, cost);
    }
    assertPositiveInteger('cost', cost);
    const now = this.now();
    if (cost > state.capacity) throw costError(cost, state.capacity);
    if (this.blocks.size !== 0) {
      const blocked = this.blockedDecision(key, now, cost, state, 0);
      if (blocked !== undefined) return blocked;
    }
    return state.takeLearned(now, cost);
  }

  /** What `tryAcquire(key, cost)` would answer now, changing nothing. */
  peek(key: string, cost: Cost = 1): Decision {
    // One comparison on the usual path (a cost of 1), as before there were units.
    if (cost !== 1) {
      if (typeof cost === 'object') return this.decideUnits(key, cost, false);
      assertPositiveInteger('cost', cost);
    }
    const now = this.now();
    const state = this.states.get(key);
    if (state !== undefined) {
      if (cost > state.capacity) throw costError(cost, state.capacity);
      return this.blockedDecision(key, now, cost, state, 0) ?? state.peek(now, cost);
    }
    const compiled = this.compiledFor(key, cost);
    const blocked = this.blockedDecision(key, now, cost, undefined, compiled.limit);
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

  /**
   * `cost` permits of `key` taken earlier were answered now: an `arrival-safe` policy counts
   * them from here for one window (the other algorithms counted them at the take and ignore
   * this). The pacer calls it as each task ends; a caller of the bare limiter with an
   * `arrival-safe` policy calls it when the response of a request arrives.
   */
  settle(key: string, cost: Cost = 1): void {
    const state = this.states.get(key);
    if (state?.settle === undefined) return;
    if (typeof cost === 'number') state.settle(this.now(), cost);
    else if (state instanceof Units) {
      state.answered(this.now(), unitVector(state.units, cost, 'cost'));
    }
    // It may rest sooner now.
    this.noRestBefore = Number.NEGATIVE_INFINITY;
  }

  /**
   * Denies every request of `key` with `reason: 'blocked'` until the ticker reaches `until`
   * (the server said Retry-After). A later block wins over an earlier one; `reset(key)` lifts it.
   */
  blockUntil(key: string, until: number): void {
    assertKey(key);
    assertFiniteNumber('until', until);
    this.blocks.set(key, until, this.now());
  }

  /** The ticker time `key` is blocked until, or undefined when it is not blocked now. */
  blockedUntil(key: string): number | undefined {
    const until = this.blocks.get(key);
    return until !== undefined && this.now() < until ? until : undefined;
  }

  /** The keys blocked now, sorted, frozen: the same array while the set is unchanged. */
  blockedKeys(): readonly string[] {
    return this.blocks.keys(this.now());
  }

  /** The earliest ticker time a server block ends, ended ones dropped (Infinity: none). */
  nextBlockEnd(): number {
    const end = this.blocks.nextEnd;
    // No block kept (the usual case): no clock read.
    if (end === Number.POSITIVE_INFINITY) return end;
    const now = this.now();
    if (end <= now) this.blocks.sweep(now);
    return this.blocks.nextEnd;
  }

  /**
   * What the server said of `key` (see `ServerSignal`): a count lowers local credit, a policy
   * becomes a learned one, a refusal blocks the key or teaches a rate, a probe holds an unknown
   * key to one request at a time. The rules are `applySignal`'s (learning.ts).
   */
  observe(key: string, signal: ServerSignal): void {
    assertKey(key);
    assertSignal(signal);
    // A signal in a unit the key does not count is ignored.
    const { unit } = signal as { readonly unit?: string };
    const states = statesOfUnit(this.keyStates, key, unit);
    if (states === undefined) return;
    applySignal(states, key, this.now(), signal);
    // The server's count in a unit already leaves out what it never charged: the credit given
    // back to that unit before (`adjust`) is in it. Kept on top, it let the key think it had
    // more tokens than the server's bucket held (bench:llm's late 429s with zero configuration).
    const state = this.states.get(key);
    const { remaining } = signal as { readonly remaining?: number };
    if (state instanceof Units && remaining !== undefined) {
      state.heardCount(this.now(), unit, remaining);
    }
  }

  /**
   * The real cost of a request of `key` is known (an LLM answer's `usage`): charges `delta` more
   * in each unit it names, or gives it back where negative (see `Units.adjust`). For keys with
   * limits per unit.
   */
  adjust(key: string, delta: UnitCosts): void {
    assertKey(key);
    const { units } = this.compiled(key);
    if (units === undefined) throw noUnitsError(key, 'delta');
    const amounts = unitVector(units, delta, 'delta', true);
    // A give-back to a key at rest (no state) changes nothing.
    if (!this.states.has(key) && amounts.every((amount) => amount <= 0)) return;
    const state = this.stateFor(key, this.now());
    if (state instanceof Units) state.adjust(this.now(), amounts);
  }

  /** Each unit of `key` (limits per unit only, else undefined): level, capacity, learned. */
  unitsOf(key: string): Readonly<Record<string, UnitInspection>> | undefined {
    assertKey(key);
    return inspectUnits(this.compiled(key), this.states.get(key), this.now());
  }

  /**
   * Permits available to `key` now as a float, partly refilled credit included (for gauges and
   * animations); a key without state has its full capacity.
   */
  level(key: string): number {
    const state = this.states.get(key);
    if (state !== undefined) return state.level(this.now());
    assertKey(key);
    return this.compiled(key).create().level(this.now());
  }

  /**
   * What `key`'s policy allows (capacity, limit, sustained rate), without creating state, and
   * the policy it learned (`learned`), which counts in the tightest figures. With a policy
   * function, it is asked again.
   */
  policyOf(key: string): PolicySummary & { readonly learned?: LearnedPolicy } {
    assertKey(key);
    const { capacity, limit, ratePerMs } = this.compiled(key);
    const state = this.states.get(key);
    const learned = learnedPolicyOf(state);
    if (learned === undefined) return { capacity, limit, ratePerMs };
    return {
      capacity: Math.min(capacity, learnedCounterOf(state)?.capacity ?? capacity),
      limit: Math.min(limit, learned.limit),
      ratePerMs: learnedRatePerMs(ratePerMs, learned),
      learned,
    };
  }

  /** Forgets `key` (its state and any block), or every key when called without one. */
  reset(key?: string): void {
    if (key === undefined) {
      this.states.clear();
      this.blocks.clear();
      this.sweep.restart();
      this.noRestBefore = Number.NEGATIVE_INFINITY;
      return;
    }
    this.states.delete(key);
    this.blocks.delete(key);
  }

  /** Drops every key at rest (and every expired block); returns how many keys were dropped. */
  evictIdle(): number {
    return this.sweepAll(this.now());
  }

  /** `tryAcquire` (`take`) or `peek` for amounts per unit: as for a number, in every unit. */
  private decideUnits(key: string, costs: UnitCosts, take: boolean): Decision {
    assertKey(key);
    const compiled = this.compiled(key);
    if (compiled.units === undefined) throw noUnitsError(key, 'cost');
    const amounts = unitVector(compiled.units, costs, 'cost');
    const now = this.now();
    let state = this.states.get(key);
    if (state === undefined && take) {
      if (this.states.size >= this.maxKeys && !this.makeRoom(now)) {
        return this.keyLimitDecision(now, compiled.limit);
      }
      state = compiled.create();
      this.sweep.step(now);
      this.states.set(key, state);
      this.noRestBefore = Number.NEGATIVE_INFINITY;
      if (state.settle !== undefined) this.settles = true;
    } else if (state === undefined && this.states.size >= this.maxKeys && !this.anyAtRest(now)) {
      return this.keyLimitDecision(now, compiled.limit);
    }
    const units = state instanceof Units ? state : new Units(compiled.units);
    const blocked = this.blockedDecision(key, now, 0, undefined, compiled.limit);
    if (blocked === undefined) return units.decide(now, amounts, take);
    // Past the block every unit must still allow it: wait for both, as for a key of one unit.
    const rate = units.decide(now, amounts, false);
    const retryAfterMs = Math.max(rate.retryAfterMs, blocked.retryAfterMs);
    return deny('blocked', retryAfterMs, 0, Math.max(rate.resetMs, blocked.resetMs), rate.limit);
  }

  /** The state of `key`, made if it has none and there is room for it (`undefined` if not). */
  private stateFor(key: string, now: number): Strategy | undefined {
    let state = this.states.get(key);
    if (state !== undefined) return state;
    if (this.states.size >= this.maxKeys && !this.makeRoom(now)) return undefined;
    state = this.compiled(key).create();
    if (state.settle !== undefined) this.settles = true;
    this.states.set(key, state);
    this.noRestBefore = Number.NEGATIVE_INFINITY;
    return state;
  }

  /** The limiter's keys as the learning sees them (learning.ts). */
  private readonly keyStates: KeyStates = {
    stateFor: (key, now) => this.stateFor(key, now),
    stateOf: (key) => this.states.get(key),
    replace: (key, state) => {
      if (state.settle !== undefined) this.settles = true;
      this.states.set(key, state);
      // The key may rest sooner (or later) with it.
      this.noRestBefore = Number.NEGATIVE_INFINITY;
    },
    compiled: (key) => this.compiled(key),
    blockUntil: (key, until) => this.blockUntil(key, until),
    unblock: (key) => this.blocks.delete(key),
    answered: () => this.answered,
  };

  private compiledFor(key: string, cost: number): CompiledPolicy {
    assertKey(key);
    const compiled = this.compiled(key);
    if (cost > compiled.capacity) throw costError(cost, compiled.capacity);
    return compiled;
  }

  /** A 'blocked' denial if the server's block on `key` still holds at `now`. */
  private blockedDecision(
    key: string,
    now: number,
    cost: number,
    state: Strategy | undefined,
    fallbackLimit: number,
  ): Decision | undefined {
    const until = this.blocks.get(key);
    if (until === undefined) return undefined;
    if (now >= until) {
      this.blocks.delete(key);
      return undefined;
    }
    let wait = wholeMs(until - now);
    if (now + wait < until) wait++;
    // Past the block the key's own policy must still allow it: wait for both.
    const rate = state?.peek(now, cost);
    const retryAfterMs = Math.max(wait, rate?.retryAfterMs ?? 0);
    const resetMs = Math.max(wait, rate?.resetMs ?? 0);
    return deny('blocked', retryAfterMs, 0, resetMs, rate?.limit ?? fallbackLimit);
  }

  private keyLimitDecision(now: number, limit: number): Decision {
    const wait = Math.max(1, wholeMs(this.noRestBefore - now));
    return deny('key-limit', wait, 0, wait, limit);
  }

  /** At the key bound: drop idle keys if any can be idle yet. True if there is room now. */
  private makeRoom(now: number): boolean {
    if (now >= this.noRestBefore) this.sweepAll(now);
    return this.states.size < this.maxKeys;
  }

  private anyAtRest(now: number): boolean {
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
    this.blocks.sweep(now);
    this.noRestBefore = earliest;
    this.sweep.restart();
    return dropped;
  }
}

/** `new RateLimiter(options)`: a keyed rate limiter. */
export function createRateLimiter(options: RateLimiterOptions): RateLimiter {
  return new RateLimiter(options);
}

function costError(cost: number, capacity: number): RangeError {
  return new RangeError(
    `[fetch-pacer] A cost of ${cost} can never be allowed: the policy holds at most ${capacity} permits at once. Raise \`burst\` or \`limit\`, or split the request.`,
  );
}

/**
 * Validates a policy input and says what it allows, naming `field` in errors (the pacer calls
 * its option `limits`).
 */
export function summarizePolicy(input: PolicyInput, field: string): PolicySummary {
  const { capacity, limit, ratePerMs } = compilePolicy(input, field);
  return { capacity, limit, ratePerMs };
}
