import type { Strategy } from './algorithms/strategy.js';
import { allow, type Decision, deny, EPSILON, wholeMs } from './decision.js';

/** Counts a `CountedBucket` keeps: O(1) memory per key, whatever the server says. */
const KEPT = 64;

/**
 * How a `CountedBucket` finds the refill past what its counts prove, measured against a
 * simulated GCRA of 60 per second through 5-60 ms of jitter each way, stating its burst of 6 or
 * 16 with whole-second resets (`ONLY=gcra PACERS=1 NOSTORE=1 DIALECT=x-ratelimit-delta npm run
 * measure:store`, seeds 1-3, rate after two windows, before a slow start could find the bucket):
 * growing by 1.05, 1.1, 1.15 at each full count ran at 0.85x, 0.87x, 0.77x of the burst of 6
 * (refusals at 1.15); cutting to the proven rate at a count of at most 1 instead of by a tenth,
 * 0.83x (1.1), 0.76x and 0.68x (1.2, 1.3, with refusals); leaving the model's room for the
 * count's each time, 0.62x. Against redis-gcra's float counts at a burst of 5 (the
 * `redis-gcra-like` row, seeds 1-12), with the requests in flight held to a full bucket:
 * growing at its highest count 0.72-0.92x with a late refusal in 2 of 12 seeds, growth capped
 * at 2 or 3 times the proven rate 0.74-0.91x (1 and 2 of 12), growing only while the requests
 * in flight did not hold the key back 0.77-0.82x, none (0.55-0.60x before any of it). With the
 * requests in flight held to the bucket the server names (5, not its highest count and one: 4)
 * and one growth per round trip, seeds 1-14 (`DELAYS=5-60,20-40,1-100`): 0.83-0.91x,
 * 0.89-0.93x, 0.59-0.67x, none refused (0.78-0.88x, 0.87-0.99x, 0.49-0.62x before); the wider
 * cap alone, growing at every full count, ran away to 86 per second and was refused in 2 of 8
 * seeds at 20-40 ms; the growth per round trip alone, 0.75-0.84x at 5-60 ms; growing by 1.2
 * with both, refused in 4 rows.
 */
const COUNTED = /* @__PURE__ */ Object.freeze({
  /** The rate paced at grows by this at each count of a full bucket the key paced into. */
  GROW: 1.1,
  /** ...and is cut by this (not below the proven) at a count of `LOW` or less. */
  CUT: 0.9,
  LOW: 1,
  /** Quiet ms after which a full bucket is at rest (and forgotten with its key). */
  FORGET_MS: 10_000,
});

/**
 * A server found to count with a bucket `capacity` deep (see `countsShowBucket` in learning.ts)
 * whose refill its answers do not state: a GCRA named by its burst, as redis-cell and throttled
 * name theirs, with a reset in whole seconds that is ceil(17 ms) after one request at 60 per
 * second. What it does state is its count on every answer, the bucket's level at the request's
 * arrival, rounded down. So the key goes by the counts:
 *
 * - **A count is room.** Of a count `c` of a request sent at `s`, every permit of the key that
 *   may arrive after that request takes its share: the ones in flight now and the ones answered
 *   since `s`. What is left the bucket surely has, and more by what it refilled since.
 * - **Between counts it refills at a rate the counts prove**, or a little more. Between the
 *   arrivals of two admitted requests `i` and `j` the bucket refilled what their counts rose by
 *   plus every permit that arrived between them and `j` itself (more if it was full, or another
 *   client spent some): `ρ (a_j - a_i) > c_j - c_i + n`, `n` counting the requests that surely
 *   arrived between (sent after `i` was answered, answered before `j` was sent), `i` answered
 *   before `j` was sent. An arrival lies between its send and its answer, so `a_j - a_i` is at
 *   most `j`'s answer less `i`'s send.
 *   The largest such bound among the counts kept never passes the server's rate. It proves only
 *   what the key sent, though: a count that found the bucket full (the highest count heard:
 *   redis-gcra's floats say 3 of a full 5) when the key paced into it, with room for more in
 *   flight, grows the rate paced at by a tenth (as TCP probes for room), once per round trip: a
 *   growth shows in the counts of requests sent after it, and grown at every full count of the
 *   requests before, a rate ran away from a refill the counts had not caught up with (86 per
 *   second of 60, refused). A count of 1 or less cuts it by a tenth, never below the proven; the
 *   count itself is all the room there is then.
 * - **No more in flight than a full bucket holds** (its capacity, the limit the server names):
 *   requests sent spaced may arrive at once through a network's jitter, and a bucket shallower
 *   than the round trip (5 at 60 per second, 83 ms) refused them. Held to its highest count and
 *   the one counted instead (4 of redis-gcra's bucket of 5, whose floats say 3 of a full one),
 *   a key waited for answers where it could send (see `COUNTED`).
 * - **A refusal halves the rate** and spends the room: something (another client, a server
 *   that is no bucket) spent what the counts promised.
 */
export class CountedBucket implements Strategy {
  readonly #sentAt = new Float64Array(KEPT);
  readonly #answeredAt = new Float64Array(KEPT);
  readonly #counts = new Float64Array(KEPT);
  /** Index of the oldest count kept, and how many are. */
  #first = 0;
  #size = 0;
  /** Permits the bucket surely has for the key's next sends, at `stamp` (may be negative). */
  #tokens = 0;
  #stamp: number;
  /** Permits taken and not answered yet. */
  #open: number;
  /** Ticker time of the last take or answer. */
  #lastAt: number;
  /** The refill the counts prove, in permits per ms. */
  provenPerMs: number;
  /** The refill paced at: the proven one, or more while the counts say the bucket is full. */
  perMs: number;
  /** When the latest-sent request whose count was heard was sent. */
  #newestSent = Number.NEGATIVE_INFINITY;
  /** The highest count heard: what the server says of a full bucket. */
  #highest = 0;
  /** When a take last put as many in flight as a full bucket holds (see `peek`). */
  #crowdedAt = Number.NEGATIVE_INFINITY;
  /** When the rate paced at last grew: a count of a request sent before it shows no more room. */
  #grewAt = Number.NEGATIVE_INFINITY;

  /**
   * `open`: the key's permits in flight now (they may arrive after any count heard from here).
   * `perMs`: the refill known so far (at least a permit over the span of the answers that
   * found the bucket).
   */
  constructor(
    readonly capacity: number,
    now: number,
    open: number,
    perMs: number,
  ) {
    this.#stamp = now;
    this.#lastAt = now;
    this.#open = open;
    this.perMs = perMs;
    this.provenPerMs = perMs;
  }

  private tokensAt(now: number): number {
    const refilled = this.#tokens + (now > this.#stamp ? now - this.#stamp : 0) * this.perMs;
    return refilled < this.capacity ? refilled : this.capacity;
  }

  tryAcquire(now: number, cost: number): Decision {
    const decision = this.peek(now, cost);
    if (decision.allowed) {
      if (this.#open + cost >= this.capacity) this.#crowdedAt = now;
      this.#tokens = this.tokensAt(now) - cost;
      this.#stamp = now;
      this.#open += cost;
      this.#lastAt = now;
    }
    return decision;
  }

  peek(now: number, cost: number): Decision {
    const tokens = this.tokensAt(now);
    const resetMs = wholeMs((this.capacity - tokens) / this.perMs);
    const left = Math.max(0, Math.floor(tokens - cost + EPSILON));
    // No more in flight than a full bucket holds: sent spaced, they may still arrive at once (see
    // the class).
    const crowded = this.#open > 0 && this.#open + cost > this.capacity;
    if (tokens >= cost - EPSILON && !crowded) return allow(left, resetMs, this.capacity);
    const waitMs = Math.max(1, wholeMs((crowded ? 1 : cost - tokens) / this.perMs));
    return deny('rate', waitMs, Math.max(0, Math.floor(tokens)), resetMs, this.capacity);
  }

  level(now: number): number {
    const tokens = this.tokensAt(now);
    return tokens > 0 ? tokens : 0;
  }

  /** Full, nothing in flight, and quiet for `FORGET_MS`. */
  isAtRest(now: number): boolean {
    return now >= this.restsAt(now);
  }

  restsAt(now: number): number {
    if (this.#open > 0) return Number.POSITIVE_INFINITY;
    const full = this.#stamp + (this.capacity - this.#tokens) / this.perMs;
    const quiet = this.#lastAt + COUNTED.FORGET_MS;
    const at = full > quiet ? full : quiet;
    return at > now ? at : now;
  }

  /** A count that names no limit (or not this one): it only lowers the room. */
  lowerRemaining(now: number, remaining: number): void {
    const room = remaining - this.#open;
    if (room < this.tokensAt(now)) {
      this.#tokens = room;
      this.#stamp = now;
    }
  }

  /**
   * The bucket had `remaining` left of `limit` at the arrival of a request sent at `sentAt`,
   * answered now: kept, it may prove a faster refill, and it is room (see the class).
   */
  heardRoom(now: number, remaining: number, limit: number, sentAt: number): void {
    if (limit !== this.capacity || !(sentAt <= now)) return;
    // Answered since the request was sent, with no higher count: they may have arrived after
    // it. (One that left more did not: at a bucket, a count after this one is lower unless the
    // bucket refilled more than the request took, and then its count is room for it as well.
    // Counted, each of a burst's answers held a permit more: a bucket of 5 drained by the key's
    // burst waited three permits' time, not one.) The send before it: a bucket full at a
    // request sent right after the one before is one the key paces. And the count heard last
    // before it was sent: from a drained bucket, what this one says refilled is the most that
    // a count proves (counts from before the bucket was last full prove little).
    let since = 0;
    let before = Number.NEGATIVE_INFINITY;
    let last = 0;
    let lastAnswered = Number.NEGATIVE_INFINITY;
    for (let k = 0; k < this.#size; k++) {
      const at = (this.#first + k) % KEPT;
      const answered = this.#answeredAt[at] as number;
      if (answered > sentAt && (this.#counts[at] as number) <= remaining) since++;
      if (answered <= sentAt && answered > lastAnswered) {
        lastAnswered = answered;
        last = k;
      }
      const sent = this.#sentAt[at] as number;
      if (sent < sentAt && sent > before) before = sent;
    }
    const j = this.remember(now, sentAt, remaining);
    if (remaining > this.#highest) this.#highest = remaining;
    const proven = Math.max(
      this.refillFrom(0, j),
      this.refillFrom(this.#size >> 1, j),
      this.refillFrom(last, j),
    );
    if (proven > this.provenPerMs) this.provenPerMs = proven;
    if (this.provenPerMs > this.perMs) this.perMs = this.provenPerMs;
    // An older count (answers overtake each other) is no news of the bucket.
    if (!(sentAt > this.#newestSent)) return;
    this.#newestSent = sentAt;
    const room = Math.min(remaining - this.#open - since, this.capacity);
    const tokens = this.tokensAt(now);
    this.#stamp = now;
    if (remaining <= COUNTED.LOW) {
      // Nearly empty: the rate paced at passed the refill; the count is all there is.
      this.#tokens = room;
      this.perMs = Math.max(this.provenPerMs, this.perMs * COUNTED.CUT);
      return;
    }
    this.#tokens = room > tokens ? room : tokens;
    // Full (its highest count) at a request sent right after the one before, with room for more
    // in flight since: the key may send faster. Grown while the requests in flight held it
    // back, the rate ran away from the refill (138 per second of 60), and once the round trips
    // shortened the key sent that fast and was refused. Once per round trip: only a request sent
    // after the last growth was sent at the rate it grew to.
    if (
      remaining >= this.#highest &&
      sentAt - before <= 1.5 / this.perMs &&
      this.#crowdedAt < before &&
      sentAt > this.#grewAt
    ) {
      this.#grewAt = now;
      this.perMs *= COUNTED.GROW;
    }
  }

  /**
   * Keeps a count of a request sent at `sentAt` and answered at `now` (the oldest goes past
   * `KEPT`) and returns where: for the refill only, not as room (an old count's room is spent
   * by answers not kept).
   */
  remember(now: number, sentAt: number, remaining: number): number {
    const at = (this.#first + this.#size) % KEPT;
    if (this.#size === KEPT) this.#first = (this.#first + 1) % KEPT;
    else this.#size++;
    this.#sentAt[at] = sentAt;
    this.#answeredAt[at] = now;
    this.#counts[at] = remaining;
    return at;
  }

  /**
   * The refill (permits per ms) proven between the count `offset` after the oldest kept and
   * the one at `j` (see the class); 0 if none. The oldest spans the most; one half-way or the
   * last before `j` was sent is less likely to span a full bucket, whose refill no count shows.
   */
  private refillFrom(offset: number, j: number): number {
    const i = (this.#first + offset) % KEPT;
    const from = this.#answeredAt[i] as number;
    const until = this.#sentAt[j] as number;
    // Only `i` answered before `j` was sent surely arrived first (two sent at once reach the
    // server in any order, whatever order their answers come in).
    if (i === j || !(from <= until)) return 0;
    let between = 0;
    for (let k = 0; k < this.#size; k++) {
      const at = (this.#first + k) % KEPT;
      if (at === i || at === j) continue;
      if ((this.#sentAt[at] as number) > from && (this.#answeredAt[at] as number) < until) {
        between++;
      }
    }
    const refilled = (this.#counts[j] as number) - (this.#counts[i] as number) + between;
    const span = (this.#answeredAt[j] as number) - (this.#sentAt[i] as number);
    return refilled > 0 && span > 0 ? refilled / span : 0;
  }

  settle(now: number, cost: number): void {
    this.#open = cost < this.#open ? this.#open - cost : 0;
    this.#lastAt = now;
  }

  /** The server refused a request of the key: half the rate, and no room left. */
  refused(now: number): void {
    this.provenPerMs /= 2;
    this.perMs = this.provenPerMs;
    const tokens = this.tokensAt(now);
    this.#tokens = tokens < 0 ? tokens : 0;
    this.#stamp = now;
  }
}
