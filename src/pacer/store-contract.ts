import type { Decision } from '../core/decision.js';
import type { ResolvedPolicy } from '../core/policy.js';
import type { ServerSignal } from '../core/signal.js';

/**
 * Where `defineStore` puts the permit source for stores (its `PermitsFactory`), for
 * `createPacer` to find. A symbol of the global registry, so a store made by another copy of
 * the package still works.
 */
export const PERMITS: unique symbol = Symbol.for('fetch-pacer.store-permits') as never;

/**
 * What the pacer passes with every call to a store: the key's policies and its lifetime.
 * The same `limits` array (frozen) comes back for the same policy, so a store may cache what it
 * derives from it (a script's arguments, a fallback limiter).
 */
export interface StoreCall {
  /**
   * The key's policies, validated, defaults filled in; with several, all must allow. For limits
   * per unit (`{ requests, tokens }`), every unit's policies, the main unit's first.
   */
  readonly limits: readonly ResolvedPolicy[];
  /**
   * For limits per unit only: the unit of each policy of `limits` (`['requests', 'tokens']`).
   * A server signal that names a unit (`unit: 'tokens'`) speaks of that unit's policies; one
   * that names none, of the first unit's. Absent: the key counts one unit, and a signal in
   * another unit than `'requests'` is not about it.
   */
  readonly units?: readonly string[];
  /**
   * The longest round trip (ms) of this pacer's recent answers of the key (0: none heard yet):
   * the server counts arrivals, which the network's jitter bunches by up to about half of it each
   * way. The stores of this package spread a policy without a burst (`capacity` 1) over a window
   * half the longest round trip any client told lately longer (`spreadAt` in
   * stores/bucket-state.ts), so that sends spaced so arrive no more than `limit` in a window.
   */
  readonly roundTripMs?: number;
  /** Aborted when the pacer is disposed: stop waiting (for a lock, a retry) and reject. */
  readonly signal: AbortSignal;
}

/**
 * What a request costs, as a store is asked for it: a number charges that many permits of every
 * policy of the key; an array, `cost[i]` of policy `i` of `StoreCall.limits` (a request of a key
 * with limits per unit: `[1, 812]` for one request and 812 tokens). An amount of 0 is always
 * allowed by that policy (the request needs none of its unit).
 */
export type StoreCost = number | readonly number[];

/** A store's news about a key that this pacer did not cause (another tab, another process). */
export interface StoreEvent {
  readonly key: string;
  /**
   * The key is blocked this many ms from now (a server's Retry-After, shared). Absent: the key's
   * credit changed (reset, lowered), so a waiting task should ask again now.
   */
  readonly blockedMs?: number;
}

/**
 * Where bucket state lives. The default (no `store`) is the pacer's own in-memory limiter, which
 * answers synchronously; a shared store (`crossTabStore`, `redisStore`) keeps one bucket per key
 * for every tab or process that uses it, and answers with a Promise.
 *
 * The contract:
 * - `take` is atomic for the store's scope: check, refill and consume happen as one step (a
 *   lock, a transaction, a script), never as a read and a later write across an await.
 * - A denial consumes nothing, and its `retryAfterMs` is the store's estimate of when the key is
 *   due: the pacer asks again then, so no separate peek is needed on the hot path.
 * - Times are relative: `retryAfterMs` and `resetMs` count from the moment the store decided, and
 *   `block` takes ms from now. A store with its own clock (a Redis server's, a shared time base
 *   of browser tabs) never leaks it; the pacer schedules with its own ticker.
 * - A store answers every call of one kind consistently: always a value (`synchronous: true`)
 *   or a Promise. The pacer makes at most one `take`/`takeMany` call per key at a time.
 *
 * Pass a store of your own through `defineStore(store)` before giving it to `createPacer`: that
 * brings in the pacer's code for stores, which bundles without a store never carry.
 */
export interface Store {
  /**
   * True when every answer is a plain value, never a Promise. Only then can `pacer.tryAcquire`
   * answer at once; otherwise it throws and `acquire` is the way.
   * @default false
   */
  readonly synchronous?: boolean;
  /**
   * True when the store learns one rate for each key from the refusals its clients observe, and
   * paces every client by it (those of this package: `SharedRate` in stores/shared-rate.ts):
   * AIMD from refusals without a wait (a bare 429: nginx's `limit_req`, HAProxy's stick tables),
   * and from one with a wait (a `Retry-After` and no policy), what it granted every client
   * before, over the server's window. A pacer then learns no rate of its own from refusals, and
   * a paced fetch retries a bare one at the store's pace rather than after a backoff. Without
   * it, each pacer learns its own, which finds only its share of the server's rate.
   * @default false
   */
  readonly pacesRefusals?: boolean;
  /**
   * Throws a TypeError naming what it cannot do when the store cannot count under `limits`
   * (an algorithm it does not implement). Called once per distinct policy.
   */
  check?(limits: readonly ResolvedPolicy[]): void;
  /** Decides for `key` and, when allowed, takes `cost` permits, atomically. */
  take(key: string, cost: StoreCost, call: StoreCall): Decision | Promise<Decision>;
  /**
   * Decides several requests of `key` in one atomic step, in order, exactly as `take` for each
   * with nobody else in between. With `stopAtDenial` it stops after the first denial (the
   * decisions returned are a prefix: the rest were not decided), as a queue must: nothing
   * behind a waiting task may start before it. Optional: without it the pacer takes one by one.
   */
  takeMany?(
    key: string,
    costs: readonly StoreCost[],
    stopAtDenial: boolean,
    call: StoreCall,
  ): readonly Decision[] | Promise<readonly Decision[]>;
  /** What `take` would answer now, taking nothing (for `maxWaitMs`). */
  peek(key: string, cost: StoreCost, call: StoreCall): Decision | Promise<Decision>;
  /**
   * The server said "not for `ms` from now": deny every take of `key` until then, for every
   * client of the store. A later block wins over an earlier one; none shortens another. Best
   * effort: it should not reject (the pacer keeps its own copy of the block either way).
   */
  block(key: string, ms: number, call: StoreCall): void | Promise<void>;
  /**
   * What the server said of `key` (`pacer.observe`), as the pacer got it: a count lowers the
   * key's credit to at most `remaining` (never raises it), a refusal with `retryAfterMs` or a
   * count of 0 with `resetMs` blocks it (see `effectOf` in stores/bucket-state.ts for what the
   * stores of this package do). A store may also share what it learns from the signal with its
   * other clients: those of this package count an advertised policy for every client
   * (`SharedLearned`), and learn one rate from bare refusals (`pacesRefusals`). A signal's
   * `sentAt` comes relative, as every time here: ms from now (0 or less). Best effort, like
   * `block`. Optional.
   */
  observe?(key: string, signal: ServerSignal, call: StoreCall): void | Promise<void>;
  /**
   * The real cost of a request of `key` that started is known (an LLM answer's `usage`):
   * policy `i` is charged `amounts[i]` more, or given it back where negative, at once and
   * whatever its credit (`pacer.adjust`). A charge beyond the credit is a debt the refill pays
   * before the policy allows more; a give-back never fills a policy past its capacity, nor past
   * the least room it had since `reservedAt`, when the reserve was taken (ms from now, 0 or
   * less, if known): a policy that filled up since has absorbed the over-charge, as the
   * server's bucket did. Best effort, like `block`. Optional: without it the store keeps what
   * each request was paced on.
   */
  adjust?(
    key: string,
    amounts: readonly number[],
    call: StoreCall,
    reservedAt?: number,
  ): void | Promise<void>;
  /** Tells `listener` about changes made elsewhere. Returns the unsubscribe. Optional. */
  subscribe?(listener: (event: StoreEvent) => void): () => void;
}
