import type { Strategy } from './algorithms/strategy.js';
import { Units } from './algorithms/units.js';
import { ServerBlocks } from './blocks.js';
import type { PolicySummary } from './compile.js';
import { type Decision, deny, wholeMs } from './decision.js';
import {
  type LearnedPolicy,
  learnedCounterOf,
  learnedPolicyOf,
  learnedRatePerMs,
  WithLearned,
} from './learned.js';
import type { KeyStates } from './learned-policy.js';
import { applySignal } from './learning.js';
import { costError, type KeyedLimiter } from './limiter.js';
import { assertSignal, type ServerSignal } from './signal.js';
import { statesOfUnit } from './units.js';
import { assertFiniteNumber, assertKey, assertPositiveInteger } from './validate.js';

/**
 * What the server said of a limiter's keys, kept once (`LimiterParts.feedback`): its blocks
 * ("not before t", from a Retry-After), which deny every request of a key until they end, and
 * what its answers taught (learning.ts: learned policies, AIMD, a slow start), which lives in the
 * keys' states. A pacer's limiter has it; a bare `createRateLimiter` carries none of it.
 */
export class ServerFeedback {
  private readonly blocks: ServerBlocks;
  /** The limiter's keys as the learning sees them (learning.ts). */
  private readonly learning: KeyStates;

  constructor(
    private readonly limiter: KeyedLimiter,
    maxKeys: number,
  ) {
    this.blocks = new ServerBlocks(maxKeys);
    this.learning = {
      stateFor: (key, now) => limiter.stateFor(key, now),
      stateOf: (key) => limiter.stateOf(key),
      replace: (key, state) => limiter.replace(key, state),
      compiled: limiter.compiled,
      blockUntil: (key, until) => this.blockUntil(key, until),
      unblock: (key) => this.blocks.delete(key),
      answered: () => limiter.answered,
      sharesRates: () => limiter.sharesRates,
      storeHearsCounts: () => this.storeHearsCounts,
    };
  }

  /**
   * Told of a key whose block was dropped to keep `maxKeys` blocks at most: what waited on it is
   * due sooner (the pacer re-times it, so its queue follows the limiter as the fast path does).
   */
  onBlockDropped: ((key: string) => void) | undefined;

  /**
   * Told of a key the server blocked (or blocked longer) until `until`, kept here or not (at
   * `maxKeys` a block that ends first is not): its waiting tasks may not wait so long.
   */
  onBlocked: ((key: string, until: number) => void) | undefined;

  /**
   * Set by a pacer whose store hears the server's counts (`Store.observe`): the store blocks a
   * key at a count of 0 for every client, as its shared count says (see `hasCredit` in
   * learning.ts), and these keys block none for it.
   */
  storeHearsCounts = false;

  /** Blocks kept (ended or not): 0 on the usual path, where a decision looks no further. */
  get blocking(): number {
    return this.blocks.size;
  }

  /**
   * Denies every request of `key` with `reason: 'blocked'` until the limiter's time reaches
   * `until` (the server said Retry-After). A later block wins over an earlier one; `reset(key)`
   * lifts it.
   */
  blockUntil(key: string, until: number): void {
    assertKey(key);
    assertFiniteNumber('until', until);
    const dropped = this.blocks.set(key, until, this.limiter.now());
    if (dropped !== undefined) this.onBlockDropped?.(dropped);
    this.onBlocked?.(key, until);
  }

  /** The time `key` is blocked until, or undefined when it is not blocked now. */
  blockedUntil(key: string): number | undefined {
    const until = this.blocks.get(key);
    return until !== undefined && this.limiter.now() < until ? until : undefined;
  }

  /** The keys blocked now, sorted, frozen: the same array while the set is unchanged. */
  blockedKeys(): readonly string[] {
    return this.blocks.keys(this.limiter.now());
  }

  /** The earliest time a server block ends, ended ones dropped (Infinity: none). */
  nextBlockEnd(): number {
    const end = this.blocks.nextEnd;
    // No block kept (the usual case): no clock read.
    if (end === Number.POSITIVE_INFINITY) return end;
    const now = this.limiter.now();
    if (end <= now) this.blocks.sweep(now);
    return this.blocks.nextEnd;
  }

  /** A `'blocked'` denial if the server's block on `key` still holds at `now`. */
  blocked(
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
    const states = statesOfUnit(this.learning, key, unit);
    if (states === undefined) return;
    const { limiter } = this;
    applySignal(states, key, limiter.now(), signal);
    // The server's count in a unit already leaves out what it never charged: the credit given
    // back to that unit before (`adjust`) is in it. Kept on top, it let the key think it had
    // more tokens than the server's bucket held (bench:llm's late 429s with zero configuration).
    const state = limiter.stateOf(key);
    const { remaining } = signal as { readonly remaining?: number };
    if (state instanceof Units && remaining !== undefined) {
      state.heardCount(limiter.now(), unit, remaining);
    }
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
  takeLearned(key: string, cost: number | Readonly<Record<string, number>> = 1): Decision {
    const { limiter } = this;
    const state = limiter.stateOf(key);
    if (typeof cost !== 'number' || !(state instanceof WithLearned)) {
      return limiter.tryAcquire(key, cost);
    }
    assertPositiveInteger('cost', cost);
    const now = limiter.now();
    if (cost > state.capacity) throw costError(cost, state.capacity);
    if (this.blocks.size !== 0) {
      const blocked = this.blocked(key, now, cost, state, 0);
      if (blocked !== undefined) return blocked;
    }
    return state.takeLearned(now, cost);
  }

  /** `summary` of a key's own policy with what `state` learned counted in. */
  summarize(
    summary: PolicySummary,
    state: Strategy | undefined,
  ): PolicySummary & { readonly learned?: LearnedPolicy } {
    const learned = learnedPolicyOf(state);
    if (learned === undefined) return summary;
    const { capacity, limit, ratePerMs } = summary;
    return {
      capacity: Math.min(capacity, learnedCounterOf(state)?.capacity ?? capacity),
      limit: Math.min(limit, learned.limit),
      ratePerMs: learnedRatePerMs(ratePerMs, learned),
      learned,
    };
  }

  /** Forgets the block of `key`, or every block. */
  reset(key?: string): void {
    if (key === undefined) this.blocks.clear();
    else this.blocks.delete(key);
  }

  /** Drops the blocks that ended by `now`. */
  sweep(now: number): void {
    this.blocks.sweep(now);
  }
}

/** The part that gives a limiter the server's feedback (see `LimiterParts`). */
export const serverFeedback = (limiter: KeyedLimiter, maxKeys: number): ServerFeedback =>
  new ServerFeedback(limiter, maxKeys);
