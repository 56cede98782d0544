import { AllOf, type Strategy, strategyFor } from './algorithms/index.js';
import { ServerBlocks } from './blocks.js';
import { monotonic, performanceTicker, type Ticker } from './clock.js';
import { type Decision, deny, EPSILON, wholeMs } from './decision.js';
import {
  AdaptiveRate,
  AIMD,
  Learned,
  type LearnedPolicy,
  type LearnedSource,
  type LearningNote,
  type Lesson,
  NOTE,
} from './learned.js';
import { type Policy, resolvePolicy } from './policy.js';
import {
  assertBound,
  assertKnownOptions,
  assertFiniteNumber,
  assertKey,
  assertPositiveInteger,
  describe,
} from './validate.js';

export type { LearnedPolicy, LearnedSource } from './learned.js';

/** One policy, or several that must all allow (`[perSecond(10), perDay(1000)]`). */
export type PolicyInput = Policy | readonly Policy[];

/** Picks the policy of a key when its state is created, for per-tier limits. */
export type PolicyResolver = (key: string) => PolicyInput;

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

/** What a server said about a key's quota (from RateLimit headers). */
export interface ServerQuota {
  /** Permits the server says are left. */
  readonly remaining: number;
  /** ms until the server's quota resets; with `remaining: 0` the key is blocked that long. */
  readonly resetMs?: number;
  /**
   * The server's limit per `windowMs`. With `windowMs` it is the server's policy, which the key
   * adopts as a learned policy (see `RateLimiter.learn`); alone it changes nothing (a server's
   * limit without its window says nothing of its rate).
   */
  readonly limit?: number;
  /** The server's window in ms (`RateLimit-Policy: "p";q=20;w=1` is 1000), with `limit`. */
  readonly windowMs?: number;
}

/** What a key's policy allows, whatever its algorithms (the tightest of several policies). */
export interface PolicySummary {
  /** Most permits at once: the smallest `burst ?? limit` (a learned policy's included). */
  readonly capacity: number;
  /** The smallest `limit` (a learned policy's included). */
  readonly limit: number;
  /** Sustained permits per ms: the slowest `limit / windowMs` (a learned policy's included). */
  readonly ratePerMs: number;
  /** The policy the key learned on top of its own, if any (see `RateLimiter.learn`). */
  readonly learned?: LearnedPolicy;
}

/** A compiled policy input: how to make a key's state, and what its policy allows. */
interface Blueprint extends PolicySummary {
  readonly create: () => Strategy;
  /** The fastest `limit / windowMs`: the rate a learned rate (AIMD) starts from and ends at. */
  readonly peakPerMs: number;
}

/** States looked at by the automatic sweep per new key: enough to outpace key creation. */
const SWEEP_STEP = 2;

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
  private readonly blueprintOf: (key: string) => Blueprint;
  private readonly maxKeys: number;
  /** The ticker, clamped: time never runs backwards here and a bad reading is ignored. */
  private readonly now: Ticker;
  /** Where the incremental sweep stands in `states`. */
  private cursor: MapIterator<[string, Strategy]> | undefined;
  /** No state rests before this (valid until a state is created); spares futile sweeps. */
  private noRestBefore = Number.NEGATIVE_INFINITY;

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
    this.blueprintOf = resolverFor(policy);
  }

  /** Keys with live state. */
  get size(): number {
    return this.states.size;
  }

  /** Decides for `key` and, when allowed, takes `cost` permits. Throws if `cost` can never fit. */
  tryAcquire(key: string, cost = 1): Decision {
    if (cost !== 1) assertPositiveInteger('cost', cost);
    const now = this.now();
    let state = this.states.get(key);
    if (state === undefined) {
      const blueprint = this.blueprint(key, cost);
      const blocked = this.blockedDecision(key, now, cost, undefined, blueprint.limit);
      if (blocked !== undefined) return blocked;
      if (this.states.size >= this.maxKeys && !this.makeRoom(now)) {
        return this.keyLimitDecision(now, blueprint.limit);
      }
      state = blueprint.create();
      this.sweepSome(now);
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

  /** What `tryAcquire(key, cost)` would answer now, changing nothing. */
  peek(key: string, cost = 1): Decision {
    if (cost !== 1) assertPositiveInteger('cost', cost);
    const now = this.now();
    const state = this.states.get(key);
    if (state !== undefined) {
      if (cost > state.capacity) throw costError(cost, state.capacity);
      return this.blockedDecision(key, now, cost, state, 0) ?? state.peek(now, cost);
    }
    const blueprint = this.blueprint(key, cost);
    const blocked = this.blockedDecision(key, now, cost, undefined, blueprint.limit);
    if (blocked !== undefined) return blocked;
    if (this.states.size >= this.maxKeys && !this.anyAtRest(now)) {
      return this.keyLimitDecision(now, blueprint.limit);
    }
    return blueprint.create().peek(now, cost);
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
    if (this.blocks.nextEnd <= this.now()) this.blocks.sweep(this.now());
    return this.blocks.nextEnd;
  }

  /**
   * The server's count for `key`: lowers the local credit to at most `remaining` (never raises
   * it), and with nothing remaining blocks the key for `resetMs`.
   *
   * With `limit` and `windowMs` (the server's policy) the key adopts `limit` per `windowMs` as
   * its learned policy (a sliding log: never more than `limit` in any window), `remaining` is
   * the count of that policy, and the block ends no later than one window after the answer
   * that opened the server's window (the one that said `limit - 1`): a reset in whole seconds
   * would hold the key up to a second too long.
   */
  observe(key: string, quota: ServerQuota): void {
    assertKey(key);
    const { remaining, resetMs, limit, windowMs } = quota;
    if (!(Number.isInteger(remaining) && remaining >= 0)) {
      throw new RangeError(
        `[fetch-pacer] Expected \`remaining\` to be an integer >= 0, got ${describe(remaining)}`,
      );
    }
    const note = (quota as { readonly [NOTE]?: LearningNote })[NOTE];
    if (note !== undefined) {
      this.heed(key, note);
      return;
    }
    const now = this.now();
    const ends = resetMs !== undefined && resetMs > 0 ? now + resetMs : undefined;
    if (limit !== undefined && windowMs !== undefined && isWindow(limit, windowMs)) {
      const lesson = this.adopt(key, now, { limit, windowMs, algorithm: 'sliding-log' }, 'server');
      if (lesson !== undefined) {
        if (remaining === limit - 1) lesson.openedAt = now;
        // Permits the log does not know of (another client's) count a whole window from now,
        // unless the server's window resets sooner (a fixed window): then only its block holds.
        if (ends === undefined || ends >= now + windowMs)
          lesson.part.lowerRemaining(now, remaining);
        if (remaining === 0 && ends !== undefined) {
          const reopens = lesson.openedAt + windowMs;
          this.blockUntil(key, reopens > now && reopens < ends ? reopens : ends);
        }
        return;
      }
    }
    if (remaining === 0 && ends !== undefined) this.blockUntil(key, ends);
    this.stateFor(key, now)?.lowerRemaining(now, remaining);
  }

  /**
   * Gives `key` a learned policy on top of its own: a request must be allowed by both (the
   * tighter of the two decides). It replaces the policy the key learned before, and starts
   * with the permits the key has in use now, so a key never gains credit by learning: its
   * credit stays at most what its own policy allows. `undefined` drops a learned policy.
   *
   * A learned policy lives in the key's state: it counts against `maxKeys` (no room, no
   * lesson), and it is forgotten with the key at rest, or by `reset(key)`.
   */
  learn(key: string, policy: Policy | undefined): void {
    assertKey(key);
    if (policy === undefined) {
      this.forget(key, undefined);
      return;
    }
    this.adopt(key, this.now(), policy, 'client');
  }

  /**
   * The server refused a request of `key` without saying its policy (a bare 429, nginx's
   * `limit_req`): AIMD (see `AIMD` for the constants). The third refusal within a second makes
   * the key learn a rate: half its own fastest rate. Each later refusal halves it again; it
   * grows back linearly as requests go through, and is dropped once it is back at the key's
   * own rate. Refusals before any request was let through at the new rate are echoes of the
   * same excess and count once. A policy the server advertised wins: it is not cut.
   */
  refused(key: string): void {
    assertKey(key);
    const now = this.now();
    const state = this.stateFor(key, now);
    if (state === undefined) return;
    const { peakPerMs } = this.blueprintOf(key);
    const learned = state instanceof Learned ? state : new Learned(state, undefined, peakPerMs);
    const lesson = learned.lesson;
    if (lesson?.policy.source === 'server') return;
    if (lesson?.part instanceof AdaptiveRate) {
      lesson.part.cut(now);
      return;
    }
    if (learned !== state) this.states.set(key, learned);
    if (now - learned.struckAt > AIMD.STRIKE_MS) {
      learned.struckAt = now;
      learned.strikes = 0;
    }
    if (++learned.strikes < AIMD.STRIKES) return;
    // The first cut halves the key's own rate. (The rate it was really sending at is not
    // known any more: by the time its refusals are read, its own bucket may have refilled.)
    const ratePerMs = peakPerMs * AIMD.CUT;
    learned.lesson = {
      part: new AdaptiveRate(ratePerMs, now),
      policy: { limit: 1, windowMs: 1 / ratePerMs, source: 'rate' },
      openedAt: Number.NEGATIVE_INFINITY,
    };
  }

  /**
   * Permits available to `key` now as a float, partly refilled credit included (for gauges and
   * animations); a key without state has its full capacity.
   */
  level(key: string): number {
    const state = this.states.get(key);
    if (state !== undefined) return state.level(this.now());
    assertKey(key);
    return this.blueprintOf(key).create().level(this.now());
  }

  /**
   * What `key`'s policy allows (capacity, limit, sustained rate), without creating state, and
   * the policy it learned (`learned`), which counts in the tightest figures. With a policy
   * function, it is asked again.
   */
  policyOf(key: string): PolicySummary {
    assertKey(key);
    const { capacity, limit, ratePerMs } = this.blueprintOf(key);
    const state = this.states.get(key);
    const lesson = state instanceof Learned ? state.lesson : undefined;
    if (lesson === undefined) return { capacity, limit, ratePerMs };
    const { part } = lesson;
    const learned: LearnedPolicy =
      part instanceof AdaptiveRate
        ? { limit: 1, windowMs: 1 / part.ratePerMs, source: 'rate' }
        : lesson.policy;
    return {
      capacity: Math.min(capacity, part.capacity),
      limit: Math.min(limit, learned.limit),
      ratePerMs: Math.min(ratePerMs, learned.limit / learned.windowMs),
      learned,
    };
  }

  /** Forgets `key` (its state and any block), or every key when called without one. */
  reset(key?: string): void {
    if (key === undefined) {
      this.states.clear();
      this.blocks.clear();
      this.cursor = undefined;
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

  /** The state of `key`, made if it has none and there is room for it (`undefined` if not). */
  private stateFor(key: string, now: number): Strategy | undefined {
    let state = this.states.get(key);
    if (state !== undefined) return state;
    if (this.states.size >= this.maxKeys && !this.makeRoom(now)) return undefined;
    state = this.blueprintOf(key).create();
    this.states.set(key, state);
    this.noRestBefore = Number.NEGATIVE_INFINITY;
    return state;
  }

  /**
   * Makes `policy` the learned policy of `key` (unless it already is, from the same source) and
   * returns it; `undefined` when there is no room for the key's state.
   */
  private adopt(
    key: string,
    now: number,
    policy: Policy,
    source: LearnedSource,
  ): Lesson | undefined {
    const state = this.stateFor(key, now);
    if (state === undefined) return undefined;
    const current = state instanceof Learned ? state.lesson : undefined;
    if (
      current !== undefined &&
      current.policy.source === source &&
      current.policy.limit === policy.limit &&
      current.policy.windowMs === policy.windowMs
    ) {
      return current;
    }
    const resolved = resolvePolicy(policy, 'policy');
    const part = strategyFor(resolved);
    // The new policy starts with the permits in use now (in flight, or not refilled yet), as
    // the policy it replaces counts them, or the key's own: learning never hands out credit.
    const before = current?.part ?? (state instanceof Learned ? state.base : state);
    const inUse = Math.ceil(before.capacity - before.level(now) - EPSILON);
    if (inUse > 0) part.lowerRemaining(now, Math.max(0, resolved.capacity - inUse));
    const lesson: Lesson = {
      part,
      policy: { limit: resolved.limit, windowMs: resolved.windowMs, source },
      openedAt: Number.NEGATIVE_INFINITY,
    };
    this.teach(key, state, lesson, this.blueprintOf(key).peakPerMs);
    return lesson;
  }

  private teach(key: string, state: Strategy, lesson: Lesson, peakPerMs: number): void {
    if (state instanceof Learned) state.lesson = lesson;
    else this.states.set(key, new Learned(state, lesson, peakPerMs));
  }

  /** Drops the learned policy of `key` (only one from `source`, when given). */
  private forget(key: string, source: LearnedSource | undefined): void {
    const state = this.states.get(key);
    if (!(state instanceof Learned) || state.lesson === undefined) return;
    if (source !== undefined && state.lesson.policy.source !== source) return;
    // Unwrapped, the key pays nothing for learning again; a strike to remember keeps it.
    if (state.struckAt === Number.NEGATIVE_INFINITY) this.states.set(key, state.base);
    else state.lesson = undefined;
    // The key may rest sooner without it.
    this.noRestBefore = Number.NEGATIVE_INFINITY;
  }

  /** What the paced fetch said beyond the server's count (see `NOTE`). */
  private heed(key: string, note: LearningNote): void {
    if (note.probe !== undefined) {
      const state = this.states.get(key);
      const known = state instanceof Learned && state.lesson !== undefined;
      if (!known) this.adopt(key, this.now(), note.probe, 'client');
    }
    if (note.unprobe === true) this.forget(key, 'client');
    if (note.refused === true) this.refused(key);
  }

  private blueprint(key: string, cost: number): Blueprint {
    assertKey(key);
    const blueprint = this.blueprintOf(key);
    if (cost > blueprint.capacity) throw costError(cost, blueprint.capacity);
    return blueprint;
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
    this.cursor = undefined;
    return dropped;
  }

  /**
   * The amortised sweep: each new key pays for looking at SWEEP_STEP existing ones, so the
   * cursor laps the map faster than keys are added and every idle key is found within a lap.
   */
  private sweepSome(now: number): void {
    for (let step = 0; step < SWEEP_STEP; step++) {
      this.cursor ??= this.states.entries();
      const next = this.cursor.next();
      if (next.done) {
        this.cursor = undefined;
        return;
      }
      const [key, state] = next.value;
      if (state.isAtRest(now)) this.states.delete(key);
    }
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

function compile(input: PolicyInput, field: string): Blueprint {
  if (Array.isArray(input)) {
    if (input.length === 0) {
      throw new TypeError(
        `[fetch-pacer] Expected \`${field}\` to hold at least one policy, got []`,
      );
    }
    const resolved = input.map((policy, index) => resolvePolicy(policy, `${field}[${index}]`));
    if (resolved.length === 1) return compile(input[0] as Policy, field);
    const rates = resolved.map((policy) => policy.limit / policy.windowMs);
    return {
      create: () => new AllOf(resolved.map(strategyFor)),
      capacity: Math.min(...resolved.map((policy) => policy.capacity)),
      limit: Math.min(...resolved.map((policy) => policy.limit)),
      ratePerMs: Math.min(...rates),
      peakPerMs: Math.max(...rates),
    };
  }
  const resolved = resolvePolicy(input as Policy, field);
  const { capacity, limit, windowMs } = resolved;
  const ratePerMs = limit / windowMs;
  return { create: () => strategyFor(resolved), capacity, limit, ratePerMs, peakPerMs: ratePerMs };
}

/**
 * Validates a policy input and says what it allows, naming `field` in errors (the pacer calls
 * its option `limits`).
 */
export function summarizePolicy(input: PolicyInput, field: string): PolicySummary {
  const { capacity, limit, ratePerMs } = compile(input, field);
  return { capacity, limit, ratePerMs };
}

/** `limit` per `windowMs` as a server may advertise it: a positive integer per a positive span. */
function isWindow(limit: number, windowMs: number): boolean {
  return Number.isInteger(limit) && limit > 0 && Number.isFinite(windowMs) && windowMs > 0;
}

function resolverFor(policy: RateLimiterOptions['policy']): (key: string) => Blueprint {
  if (typeof policy !== 'function') {
    const blueprint = compile(policy, 'policy');
    return () => blueprint;
  }
  // Policies returned for keys are usually a few shared objects (tiers): compile each once.
  const compiled = new WeakMap<object, Blueprint>();
  return (key) => {
    const input = policy(key);
    if (typeof input !== 'object' || input === null) return compile(input, `policy('${key}')`);
    let blueprint = compiled.get(input);
    if (blueprint === undefined) {
      blueprint = compile(input, `policy('${key}')`);
      compiled.set(input, blueprint);
    }
    return blueprint;
  };
}
