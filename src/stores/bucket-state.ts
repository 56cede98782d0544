import { combine } from '../core/algorithms/all-of.js';
import { AIMD } from '../core/adaptive-rate.js';
import { type Admits, settleRetry } from '../core/algorithms/strategy.js';
import { whole } from '../core/algorithms/token-bucket.js';
import { allow, type Decision, deny, EPSILON, wholeMs } from '../core/decision.js';
import { longestWindow, type ResolvedPolicy, valueName } from '../core/policy.js';
import { MAX_DELAY_MS, type ServerSignal, serverDelay } from '../core/signal.js';
import { LOW_ROOMS, noteRoom, roomSince } from '../core/low-room.js';
import type { StoreCost } from '../pacer/store-contract.js';
import {
  admit,
  noAdmissions,
  RatePart,
  lateCreditMs,
  rateAt,
  refused,
  refusedWithWait,
  type SharedAdmissions,
  type SharedRate,
} from './shared-rate.js';
import { RATE_WINDOW_MS } from '../core/refusals.js';
import {
  COUNTED_SHARED,
  foundByAdmissions,
  heardCount,
  keepCounts,
  keepHighs,
  refusedCount,
  showsBucket,
} from './shared-counts.js';

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
  /**
   * The policies the server advertised to any client of the store, counted by all of them: at
   * most one per unit (the main unit's, and with limits per unit one per other unit, each
   * counting the amounts of its unit's first policy: `SharedLearned.of`), in that order.
   */
  learned?: SharedLearned[];
  /** The rate the key's bare refusals taught, paced for every client (see `SharedRate`). */
  rate?: SharedRate;
  /** What the key was granted less what was refused, recently (see `SharedAdmissions`). */
  admissions?: SharedAdmissions;
  /**
   * Per policy, for a key with limits per unit (its costs come per policy): the least room to
   * its capacity since each take, `[time, room, ...]` (see low-room.ts), so that a give-back
   * a policy absorbed since its reserve is not credited again (`adjust`).
   */
  lows?: number[][];
  /**
   * The longest round trip (ms) a client told, with a take (`StoreCall.roundTripMs`) or an
   * answer, at `roundTripAt`, halving every longest window of the key's since (see `spreadAt`).
   */
  roundTripMs?: number;
  roundTripAt?: number;
}

/**
 * A policy the server advertised (a `policy` signal), as every client of a store counts it: its
 * rate spread evenly, a GCRA of one permit per `(windowMs + roundTripMs / 2) / limit` and no
 * burst. The server counts arrivals, which jitter spreads by up to about half a round trip each
 * way on a symmetric path, so sends spaced so arrive no more than `limit` in any window, whatever
 * way the server counts (the store's analogue of a pacer's arrival-safe accounting, which needs
 * every permit's answer: a store hears only the answers that state the policy or its count).
 * Spaced by the window alone, jitter bunched arrivals past the limit, and a count of 0 blocked
 * every client for the server's whole-second reset (three pacers on a store against simulated
 * windows stating their limit, IETF or `X-RateLimit-*`, through 5-60 ms each way: 0.52-0.99x of
 * the rate after two windows, 36 refusals after them over nine seeds; 0.72-0.94x and none spaced
 * so; real fixed windows 0.90-0.93x before, 0.87-0.90x so). The first window's burst is the price
 * too. A request bigger than one permit goes when the key is due and pays for its whole cost
 * after. It lives as long as the key's state, and at least two of its windows after it was last
 * used.
 */
export interface SharedLearned {
  readonly limit: number;
  /** Its window; a bucket's counts steer it (see `countedAt`). */
  windowMs: number;
  /**
   * The index of the policy (in the key's limits) whose amount a request pays here: 0 for the
   * main unit; for another unit (tokens), its first policy's.
   */
  readonly of: number;
  /** Shared-clock ms of its last change. */
  stamp: number;
  /**
   * Shared-clock ms it was learned: a late client keeps a credit (`LATE_MS`) only from a window
   * after. The requests sent before it was heard (each client's first, at the store's first
   * answers) are in the server's first window, which its spacing does not count: with the credit
   * there too, three processes 10x generous against real express-rate-limit (fixed windows
   * from the first request) sent one too many in it in two runs of three, and waited a second
   * for it (1.51x the ideal time, 1.27x without). Absent: long ago.
   */
  from?: number;
  /** ms of debt ahead of the stamp. */
  debt: number;
  /**
   * The longest round trip (ms) of an answer that stated the policy or its count, at most a
   * window, heard at `heardAt` and halving every window since (`roundTripAt`): a slower network
   * widens the spacing at once, a faster one narrows it within a few windows. None heard: 0.
   */
  roundTripMs?: number;
  heardAt?: number;
  /**
   * While no bucket was found: the send (shared ms) and count of the last answers of its limit
   * that left at least `limit - 2`, as pairs (see shared-counts.ts).
   */
  highs?: number[];
  /**
   * Shared-clock ms its counts showed a bucket, or its rate last changed since: from then on
   * its counts steer its window, and another window of its limit does not replace it
   * (shared-counts.ts).
   */
  countedAt?: number;
  /** The times a bucket's counts slowed it (shared-counts.ts). */
  cuts?: number;
  /**
   * Shared-clock ms of the last take of a bucket within a spacing of when its permit was due:
   * its clients paced into it, so a full count then says it may go faster (shared-counts.ts).
   */
  busyAt?: number;
  /**
   * The count of a bucket that last cut it, until a count finds it full again: only a lower one
   * cuts it again (shared-counts.ts).
   */
  cutCount?: number;
  /** Counts of half the bucket or less in a row (shared-counts.ts, `LOW_RUN`). */
  lowRun?: number;
  /**
   * Learned from a window a reset showed (or a rate), not one the server stated: only then may
   * its counts show a bucket (shared-counts.ts), as only then do a pacer's (`countsShowBucket`).
   */
  inferred?: true;
}

/** The most permits per window a store learns, as the paced fetch caps them (MAX_LEARNED_LIMIT). */
const MOST_LEARNED = 10_000;

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
        `[fetch-pacer] ${store} counts with \`tokenBucket\` or \`gcra\`, got \`${valueName(policy.algorithm)}\`. Use one of those (a token bucket of the same limit and window is the closest), or the in-memory store.`,
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
  const state: BucketState = {
    stamps,
    values,
    blockedUntil: Number.isFinite(blockedUntil) ? blockedUntil : 0,
  };
  const learned: SharedLearned[] = [];
  for (const each of Array.isArray(found.learned) ? found.learned : []) {
    const { limit, windowMs, stamp, debt, of } = (each ?? {}) as Partial<SharedLearned>;
    if (
      isLearnable(limit, windowMs) &&
      Number.isFinite(stamp) &&
      Number.isFinite(debt) &&
      Number.isInteger(of) &&
      (of as number) >= 0 &&
      (of as number) < limits.length &&
      !learned.some((kept) => kept.of === of)
    ) {
      const kept = { limit, windowMs, of, stamp, debt } as SharedLearned;
      const { roundTripMs, heardAt, from } = each as Partial<SharedLearned>;
      if (Number.isFinite(from)) kept.from = from as number;
      if (Number.isFinite(roundTripMs) && Number.isFinite(heardAt)) {
        kept.roundTripMs = roundTripMs as number;
        kept.heardAt = heardAt as number;
      }
      keepCounts(each as Partial<SharedLearned>, kept);
      learned.push(kept);
    }
  }
  if (learned.length > 0) state.learned = learned.sort((a, b) => a.of - b.of);
  const { roundTripMs, roundTripAt } = found;
  if (Number.isFinite(roundTripMs) && Number.isFinite(roundTripAt)) {
    state.roundTripMs = roundTripMs as number;
    state.roundTripAt = roundTripAt as number;
  }
  const lows = found.lows;
  if (
    Array.isArray(lows) &&
    lows.length === limits.length &&
    lows.every(
      (notes) =>
        Array.isArray(notes) &&
        notes.length % 2 === 0 &&
        notes.length <= 2 * LOW_ROOMS &&
        notes.every(Number.isFinite),
    )
  ) {
    state.lows = lows.map((notes) => [...notes]);
  }
  const rate = found.rate as Partial<SharedRate> | undefined;
  if (
    typeof rate === 'object' &&
    rate !== null &&
    [rate.perMs, rate.ceiling, rate.cutAt, rate.stamp, rate.debt, rate.streak].every(
      Number.isFinite,
    ) &&
    typeof rate.refusedAt === 'number' &&
    (rate.perMs as number) > 0 &&
    (rate.ceiling as number) >= 0
  ) {
    const { perMs, ceiling, cutAt, stamp, debt, streak, refusedAt } = rate as SharedRate;
    const granted = Number.isFinite(rate.granted) ? (rate.granted as number) : 0;
    const probeAt = Number.isFinite(rate.probeAt) ? (rate.probeAt as number) : refusedAt;
    const sample = Number.isFinite(rate.sample) ? (rate.sample as number) : 0;
    const roundTripMs = Number.isFinite(rate.roundTripMs) ? (rate.roundTripMs as number) : 0;
    state.rate = {
      perMs,
      ceiling,
      cutAt,
      stamp,
      debt,
      streak,
      refusedAt,
      granted,
      probeAt,
      sample,
      roundTripMs,
    };
    if (Number.isFinite(rate.sampleFrom)) state.rate.sampleFrom = rate.sampleFrom as number;
    keepHighs(rate, state.rate);
  }
  const admissions = found.admissions as Partial<SharedAdmissions> | undefined;
  if (
    typeof admissions === 'object' &&
    admissions !== null &&
    Number.isFinite(admissions.count) &&
    Number.isFinite(admissions.at)
  ) {
    const { count, at, sample, since } = admissions as SharedAdmissions;
    // A count of unknown age (written before `from` was kept) is taken as long begun.
    const from = Number.isFinite(admissions.from)
      ? (admissions.from as number)
      : Number.NEGATIVE_INFINITY;
    state.admissions =
      Number.isFinite(sample) && Number.isFinite(since)
        ? { count, at, sample, since, from }
        : { count, at, sample: 0, since: at, from };
  }
  return state;
}

/** A limit a store counts: a whole number of permits up to `MOST_LEARNED`. */
function isCountable(limit: unknown): limit is number {
  return Number.isInteger(limit) && (limit as number) > 0 && (limit as number) <= MOST_LEARNED;
}

/** A policy a store adopts: a whole limit up to `MOST_LEARNED`, a window up to the longest delay. */
export function isLearnable(limit: unknown, windowMs: unknown): boolean {
  return (
    isCountable(limit) && typeof windowMs === 'number' && windowMs >= 1 && windowMs <= MAX_DELAY_MS
  );
}

function fresh(policy: ResolvedPolicy): number {
  return policy.algorithm === 'gcra' ? 0 : policy.capacity;
}

/**
 * GCRA: ms of debt at `at` of `debt` ms ahead of `stamp`, never below `floor` (0: none; a
 * learned policy's credit for a late client, below 0: see `LATE_MS`).
 */
function debtAt(stamp: number, debt: number, at: number, floor = 0): number {
  const elapsed = at - stamp;
  if (!(elapsed > 0)) return debt;
  return debt - elapsed > floor ? debt - elapsed : floor;
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
    return debtAt(this.stamp, this.value, at);
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

  /**
   * The decision at `now`; with `take`, an allowed one is written to the state. A cost of 0 (a
   * request that needs none of this policy's unit) is allowed whatever the credit, as the core's
   * `Units` allows it.
   */
  decide(now: number, cost: number, take: boolean): Decision {
    const { limit, windowMs, capacity, algorithm } = this.policy;
    const tokens = this.tokensAt(now);
    if (cost === 0) return allow(whole(tokens), 0, limit);
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
      this.noteRoom(now);
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

  /** Keeps the room the policy has now, before a take or a charge (see low-room.ts). */
  private noteRoom(now: number): void {
    const notes = this.state.lows?.[this.index];
    if (notes !== undefined) noteRoom(notes, now, this.policy.capacity - this.tokensAt(now));
  }

  lower(now: number, remaining: number): void {
    if (this.tokensAt(now) <= remaining) return;
    const { limit, windowMs, capacity, algorithm } = this.policy;
    this.state.values[this.index] =
      algorithm === 'gcra' ? ((capacity - remaining) * windowMs) / limit : remaining;
    if (now > this.stamp) this.state.stamps[this.index] = now;
  }

  /**
   * Charges `amount` more (a request cost more than it was paced on) or gives `-amount` back,
   * unconditionally: a charge beyond the credit is debt (tokens below 0, or GCRA debt past the
   * burst) that the refill pays before any request of this unit is allowed again; a give-back
   * never fills the policy past its capacity, nor past the least room it had since `since`,
   * when its reserve was taken (a policy that filled up since has absorbed the over-charge).
   */
  adjust(now: number, amount: number, since?: number): void {
    const { limit, windowMs, capacity, algorithm } = this.policy;
    const notes = this.state.lows?.[this.index];
    if (amount > 0) this.noteRoom(now);
    else if (since !== undefined && notes !== undefined) {
      const room = roomSince(notes, since);
      if (room < -amount) amount = -room;
    }
    if (algorithm === 'gcra') {
      const debt = this.debtAt(now) + (amount * windowMs) / limit;
      this.state.values[this.index] = debt > 0 ? debt : 0;
    } else {
      const tokens = this.tokensAt(now) - amount;
      this.state.values[this.index] = tokens < capacity ? tokens : capacity;
    }
    if (now > this.stamp) this.state.stamps[this.index] = now;
  }
}

/** The round trip `learned` spaces its permits by at `now` (see `SharedLearned.roundTripMs`). */
function roundTripAt(learned: SharedLearned, now: number): number {
  return heldAt(learned.roundTripMs, learned.heardAt, now, learned.windowMs);
}

/**
 * A round trip of `ms` heard `at`, as it holds at `now`: halved every `windowMs` since (a slower
 * network counts at once, a faster one within a few windows). 0 when none was heard.
 */
function heldAt(ms: number | undefined, at: number | undefined, now: number, windowMs: number) {
  if (ms === undefined || at === undefined) return 0;
  return now > at ? ms * 0.5 ** ((now - at) / windowMs) : ms;
}

/**
 * An answer that stated the learned policy counting the amounts of policy `of` came `ms` after
 * its request was sent: it spaces that policy's permits from `now` on if longer than the round
 * trip it holds.
 */
export function heardRoundTrip(state: BucketState, now: number, of: number, ms: number): void {
  const learned = state.learned?.find((each) => each.of === of);
  if (learned === undefined || !(ms > roundTripAt(learned, now))) return;
  // At most a window: one request slower than that (a long poll, an upload) would otherwise
  // space every client's permits by half its time, where it holds only its own arrival.
  learned.roundTripMs = Math.min(ms, learned.windowMs);
  learned.heardAt = now;
}

/**
 * Whether `learned` is a window past the one it was learned in at `at`: the requests sent before
 * it was heard are in the server's count there, not in its spacing (see `SharedLearned.from`).
 */
function settled(learned: SharedLearned, at: number): boolean {
  const { from, windowMs } = learned;
  return from === undefined || at >= from + windowMs;
}

/** The shared learned policy of a state (see `SharedLearned`), with the core's decisions. */
class LearnedPart {
  constructor(private readonly learned: SharedLearned) {}

  /**
   * ms between two permits at `now`: a window's spread over its limit, a late client's credit
   * (`LATE_MS`) and half the round trip wider.
   */
  private spacingAt(now: number): number {
    const { windowMs, limit, countedAt } = this.learned;
    // A bucket's window is its rate, which its counts steer: no server window to spread, and
    // a late client's credit (of a stated policy whose counts showed a bucket) needs no wider
    // spacing to keep within it either: a bucket takes bursts.
    if (countedAt !== undefined) return windowMs / limit;
    return (windowMs + this.lateMs() + roundTripAt(this.learned, now) / 2) / limit;
  }

  /**
   * The credit of a client late for its permit (`LATE_MS`), of a policy stated or inferred from
   * a reset. Kept for a stated one only before (an inferred window may be a bucket's), three
   * processes on one Redis store, 10x generous, ran at 0.86-0.88x of the rate of the real fixed
   * windows saying `X-RateLimit-*` through 5-60 ms of jitter (fastify, koa, rate-limiter-flexible,
   * express-rate-limit's legacy headers; 0.94-0.95x with it) and at 0.91x straight to them
   * (0.99-1.00x). With it alone, a simulated sliding log's count came to 0 and blocked the key
   * until its reset, when it is empty again (0.98x of the rate on loopback -> 0.56-0.58x): such a
   * count is the key's own now (`agreesAtZero`).
   */
  private lateMs(): number {
    const { windowMs, limit } = this.learned;
    return lateCreditMs(windowMs / limit);
  }

  /** The policy whose amount a request pays here (see `SharedLearned.of`). */
  get of(): number {
    return this.learned.of;
  }

  debtAt(at: number): number {
    const { stamp, debt } = this.learned;
    return debtAt(stamp, debt, at, settled(this.learned, at) ? -this.lateMs() : 0);
  }

  decide(now: number, cost: number, take: boolean): Decision {
    const { limit } = this.learned;
    if (cost === 0) return allow(0, 0, limit);
    const debt = this.debtAt(now);
    const spacing = this.spacingAt(now);
    if (debt > EPSILON * spacing) return deny('rate', wholeMs(debt), 0, wholeMs(debt), limit);
    const after = debt + cost * spacing;
    if (take) {
      const { countedAt, stamp } = this.learned;
      // Taken within a spacing of when it was due: the key paces into it (see `busyAt`).
      if (countedAt !== undefined && now - (stamp + this.learned.debt) < spacing) {
        this.learned.busyAt = now;
      }
      this.learned.debt = after;
      if (now > this.learned.stamp) this.learned.stamp = now;
    }
    return allow(0, wholeMs(after), limit);
  }

  /** As `Part.adjust`: a charge is debt, a give-back cancels debt (never below none). */
  adjust(now: number, amount: number): void {
    const debt = this.debtAt(now) + amount * this.spacingAt(now);
    this.learned.debt = debt > 0 ? debt : 0;
    if (now > this.learned.stamp) this.learned.stamp = now;
  }

  restsAt(now: number): number {
    const { stamp, windowMs, countedAt } = this.learned;
    const kept = countedAt === undefined ? 2 * windowMs : COUNTED_SHARED.FORGET_MS;
    const until = Math.max(now + this.debtAt(now), stamp + kept);
    return until > now ? until : now;
  }
}

type AnyPart = Part | LearnedPart | RatePart;

/**
 * The parts of a state: its own policies, in the order of `limits` (policy `i` pays
 * `amountOf(cost, i)`), then the learned policies, each paying its `of` policy's amount, then
 * the shared rate, which paces the main unit's amount.
 */
function parts(state: BucketState, limits: Limits): AnyPart[] {
  const all: AnyPart[] = ownParts(state, limits);
  for (const learned of state.learned ?? []) all.push(new LearnedPart(learned));
  if (state.rate !== undefined) all.push(new RatePart(state.rate));
  return all;
}

/** The index of the policy whose amount `part` (at `index` among the parts) pays. */
function paysOf(part: AnyPart, index: number): number {
  if (part instanceof LearnedPart) return part.of;
  return part instanceof RatePart ? 0 : index;
}

/** The key's own rate: its first policy's (a shared rate is dropped there). */
function ownPerMs(limits: Limits): number {
  const first = limits[0];
  return first === undefined ? Number.POSITIVE_INFINITY : first.limit / first.windowMs;
}

/** What policy `index` of a key pays of `cost` (see `StoreCost`). */
export function amountOf(cost: StoreCost, index: number): number {
  if (typeof cost === 'number') return cost;
  return cost[index] ?? 0;
}

/** The parts of the key's own policies, without a learned one (which a count does not lower). */
function ownParts(state: BucketState, limits: Limits): Part[] {
  return limits.map((policy, index) => new Part(policy, state, index));
}

/** What a request of `cost` gets at `now`, all policies together; with `take`, it is charged. */
function decideAll(all: readonly AnyPart[], now: number, cost: StoreCost, take: boolean): Decision {
  const amount = (part: AnyPart, index: number) => amountOf(cost, paysOf(part, index));
  if (all.length === 1) return (all[0] as AnyPart).decide(now, amountOf(cost, 0), take);
  const peeks = all.map((part, index) => part.decide(now, amount(part, index), false));
  const verdict = combine(peeks);
  if (!verdict.allowed || !take) return verdict;
  return combine(all.map((part, index) => part.decide(now, amount(part, index), true)));
}

/** The core's 'blocked' denial: wait for the block, and past it for the key's own policy too. */
function blockedDecision(
  all: readonly AnyPart[],
  state: BucketState,
  now: number,
  cost: StoreCost,
) {
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
 * `limits` as a take or peek of a client that told `roundTripMs` counts them at `now`: a policy
 * without a burst (`capacity` 1: a paced fetch's spaced default) over a window half the key's round
 * trip longer, at most half again as long. The round trip is the longest a client told, halving
 * every longest window of the key's since it was told (a take or an answer, `observe`, keeps a
 * longer one in `state`: `keep`). A store counts a request at its send and never hears when it
 * arrived; the server counts arrivals, which jitter bunches by up to about half a round trip each
 * way on a symmetric path: sends spaced one every `windowMs / limit` arrived closer, and a window
 * of the server's held one more than the limit (three paced fetches on one store configured to the
 * published 60 per second, through 5-60 ms each way: a sliding log refused 3-5 calls of 300, a
 * sliding-window counter and fixed windows 0-1). Spread so, they arrive no more than `limit` in a
 * window, as a learned policy's (`SharedLearned`), on a symmetric path. Shared: a client's first
 * requests, before its own first answer, are spread by the others' (a random property of three
 * paced fetches on one store at the published limit: refusals in 26 scenarios of 150 unspread, 6
 * with each spreading only by its own answers, 1 so: a way out longer than half the round trip, 27
 * of 30 ms, bunched a sliding log's arrivals). A token bucket's refill since its last take is
 * counted over the window of the ask, so the gap before a longer round trip was told is spread too;
 * a GCRA's debt is set at the take. A policy with a burst says the server takes bursts, which
 * absorb the jitter.
 */
export function spreadAt(
  state: BucketState,
  limits: Limits,
  now: number,
  roundTripMs: number,
  keep: boolean,
): Limits {
  if (!limits.some((policy) => policy.capacity === 1)) return limits;
  let held = heldAt(state.roundTripMs, state.roundTripAt, now, longestWindow(limits));
  if (roundTripMs > held && Number.isFinite(roundTripMs)) {
    held = roundTripMs;
    if (keep) {
      state.roundTripMs = held;
      state.roundTripAt = now;
    }
  }
  const halfMs = Math.ceil(held / 2);
  if (!(halfMs > 0)) return limits;
  return limits.map((policy) => {
    const { windowMs, capacity } = policy;
    return capacity === 1
      ? { ...policy, windowMs: windowMs + Math.min(halfMs, windowMs / 2) }
      : policy;
  });
}

/**
 * Decides `costs` in order at `now`, charging the allowed ones to `state` (a denial changes
 * nothing but a longer round trip told, `spreadAt`). With `stopAtDenial` it returns the
 * decisions up to and including the first denial.
 */
export function decide(
  state: BucketState,
  own: Limits,
  now: number,
  costs: readonly StoreCost[],
  stopAtDenial: boolean,
  roundTripMs = 0,
): Decision[] {
  const limits = spreadAt(state, own, now, roundTripMs, true);
  let all = parts(state, limits);
  const decisions: Decision[] = [];
  // Costs per policy are a key with limits per unit, whose reserves may be given back.
  if (costs.some((cost) => typeof cost !== 'number')) state.lows ??= limits.map(() => []);
  for (const cost of costs) {
    assertFits(limits, cost);
    const decision = blockedDecision(all, state, now, cost) ?? decideAll(all, now, cost, true);
    decisions.push(decision);
    if (decision.allowed && granted(state, limits, now, amountOf(cost, 0))) {
      all = parts(state, limits);
    }
    if (stopAtDenial && !decision.allowed) break;
  }
  // Kept once something is noted (as the Redis script writes them).
  if (state.lows?.every((notes) => notes.length === 0)) delete state.lows;
  return decisions;
}

/**
 * `amount` of the main unit was granted at `now`: counted in the key's admissions, and a shared
 * rate grown back to the key's own is dropped (true then: the parts changed).
 */
function granted(state: BucketState, limits: Limits, now: number, amount: number): boolean {
  state.admissions ??= noAdmissions(now);
  admit(state.admissions, now, amount);
  if (state.rate === undefined || rateAt(state.rate, now) < ownPerMs(limits)) return false;
  delete state.rate;
  return true;
}

/** Throws a RangeError for a cost some policy can never allow (more than it holds at once). */
function assertFits(limits: Limits, cost: StoreCost): void {
  limits.forEach((policy, index) => {
    const amount = amountOf(cost, index);
    if (amount > policy.capacity) {
      throw new RangeError(
        `[fetch-pacer] A cost of ${amount} can never be allowed: the policy holds at most ${policy.capacity} permits at once.`,
      );
    }
  });
}

/**
 * Whether a server's count of 0 (of the limit `named`, in the unit whose first policy is
 * `which[0]`, answered `roundTripMs` after its request was sent) agrees with the key's own count at
 * `now`: the key counts the policy learned of that limit (or, nothing learned in that unit, its own
 * policy of that limit or burst) and has no permit to give now, blocks aside, or took one after
 * that request was sent (answered late, the count found the spacing due
 * again, and blocked every client until a sliding-window counter's window ended: three pacers on
 * one store, 10x generous, through 5-60 ms of jitter, fractional resets, 0.73-0.91x of its rate
 * after two windows, 0.90-0.91x so). Then the count is the key's own requests, its spacing knows
 * when the next permit frees, and the count's reset is no block: a sliding-window counter's reset
 * is when its window ends, a sliding log's when it is empty again, while their room grows back at
 * the rate (three pacers on one store, 10x generous, against one stating its policy in IETF headers
 * on loopback waited a second at each count of 0: 0.57x of the rate after two windows, 0.98x so). A
 * window inferred from a reset agrees only from a window after it was learned: the requests sent
 * before (a slow start's) are in the server's count and not in the spacing (agreed with in it,
 * simulated fixed windows and sliding logs 1-3 ms away refused one request in their first window,
 * 1.25x -> 1.54x the ideal time, and one saying fractional resets then held the key to 0.48x of its
 * rate). Otherwise the count is of requests the key did not count (other clients'), and its reset
 * is when the key may go again. The key's own policy of that limit counts the server's window
 * already (`countsOwn`: no window of it is learned): read as other clients', a count of 0 at the
 * end of each window blocked three pacers on one store told the published 60 per second until a
 * sliding-window counter's reset, a second on, every other second (HAProxy-like, stating
 * fractional Unix resets, 0-3 ms away: 0.57x of its rate after two windows; 0.97-0.98x so, and a
 * sliding log 0.74-0.76x -> 0.98x, on the manual clock of `GENEROUS=1 npm run measure:store`).
 */
function agreesAtZero(
  state: BucketState,
  limits: Limits,
  now: number,
  which: readonly number[],
  named: number | undefined,
  roundTripMs = 0,
): boolean {
  const of = which[0] as number;
  const learned = state.learned?.find((each) => each.of === of);
  let takenAt: number;
  if (learned !== undefined) {
    if (learned.limit !== named) return false;
    // Within the window it was learned in, the server counts requests its spacing did not.
    if (learned.inferred === true && !settled(learned, now)) return false;
    takenAt = learned.stamp;
  } else {
    const own = limits[of];
    if (own === undefined || named === undefined) return false;
    if (own.limit !== named && !namesOwnBurst(own, named)) return false;
    // A state made just now (its stamps are now) took nothing.
    const stamp = state.stamps[of] ?? Number.NEGATIVE_INFINITY;
    takenAt = stamp < now ? stamp : Number.NEGATIVE_INFINITY;
  }
  if (!decideAll(parts(state, limits), now, 1, false).allowed) return true;
  return takenAt > now - roundTripMs;
}

/** What `decide` would answer for one request, changing nothing. */
export function peek(
  state: BucketState,
  own: Limits,
  now: number,
  cost: StoreCost,
  roundTripMs = 0,
): Decision {
  const all = parts(state, spreadAt(state, own, now, roundTripMs, false));
  return blockedDecision(all, state, now, cost) ?? decideAll(all, now, cost, false);
}

/**
 * Lowers the credit of the policies `which` names (every one by default) to at most
 * `remaining` (the server's count); never raises it.
 */
export function lower(
  state: BucketState,
  limits: Limits,
  now: number,
  remaining: number,
  which?: readonly number[],
): void {
  const own = ownParts(state, limits);
  for (const index of which ?? own.keys()) own[index]?.lower(now, remaining);
}

/**
 * The real cost of a started request is known: policy `i` is charged `amounts[i]` more, or
 * given it back where negative (see `Part.adjust`; `reservedAt`: when its reserve was taken, ms
 * from `now`, as `Store.adjust` passes it), and so is a learned policy in its unit, whole (a
 * reserve of tokens given back is not held in the spread either; spread evenly without a burst,
 * it is slower than the server's bucket already, and nothing it absorbed is the server's).
 */
export function adjust(
  state: BucketState,
  limits: Limits,
  now: number,
  amounts: readonly number[],
  reservedAt?: number,
): void {
  const since = reservedAt === undefined ? undefined : now + reservedAt;
  parts(state, limits).forEach((part, index) => {
    const amount = amounts[paysOf(part, index)] ?? 0;
    if (amount === 0 || !Number.isFinite(amount)) return;
    if (part instanceof Part) part.adjust(now, amount, since);
    else part.adjust(now, amount);
  });
}

/**
 * The policies of a key (by index in its limits) that a server's count in `unit` speaks of.
 * `units` is `StoreCall.units`: the unit of each policy, for a key with limits per unit (a
 * count that names no unit is in the first, its main unit); without it the key counts one unit,
 * which takes the counts that name none or `'requests'`. Empty: the key does not count `unit`.
 */
export function policiesOfUnit(
  units: readonly string[] | undefined,
  count: number,
  unit: string | undefined,
): number[] {
  const all = Array.from({ length: count }, (_, index) => index);
  if (units === undefined) return unit === undefined || unit === 'requests' ? all : [];
  const name = unit ?? units[0];
  return all.filter((index) => units[index] === name);
}

/**
 * The server advertised `limit` per `windowMs` in the unit whose first policy is `of` (0, the
 * main unit, by default): every client of the store counts it from now (see `SharedLearned`).
 * The same policy again keeps its count, as does a window within a tenth of it (one inferred
 * from a reset wobbles with the network's delay), or any window of the limit of a policy found
 * to be a bucket (its counts steer it: shared-counts.ts). `inferred`: the window was inferred
 * (see `SharedLearned.inferred`).
 */
export function learn(
  state: BucketState,
  now: number,
  limit: number,
  windowMs: number,
  of = 0,
  inferred = false,
): SharedLearned | undefined {
  const learned = state.learned ?? [];
  const at = learned.findIndex((each) => each.of === of);
  const current = learned[at];
  if (
    current !== undefined &&
    current.limit === limit &&
    (current.countedAt !== undefined || Math.abs(current.windowMs - windowMs) <= windowMs / 10)
  ) {
    return undefined;
  }
  const fresh: SharedLearned = { limit, windowMs, of, stamp: now, debt: 0, from: now };
  if (inferred) fresh.inferred = true;
  // The network's round trip is kept: a new policy is no faster network.
  if (current?.roundTripMs !== undefined && current.heardAt !== undefined) {
    fresh.roundTripMs = current.roundTripMs;
    fresh.heardAt = current.heardAt;
  }
  if (at >= 0) learned[at] = fresh;
  else learned.splice(learned.filter((each) => each.of < of).length, 0, fresh);
  // In the order of their policies, as the Redis script keeps them (the binding decision of
  // a tie is the first).
  state.learned = learned;
  return fresh;
}

/** What a server signal does to a shared bucket (see `effectOf`). */
export interface SignalEffect {
  /** The count the credit is lowered to, if any. */
  readonly remaining: number | undefined;
  /** How long the key is blocked (ms from now); 0 for no block. */
  readonly blockMs: number;
  /**
   * The policy the server advertised, which every client then counts (see `SharedLearned`);
   * `of`: the first policy of its unit (`effectOn` sets it; 0 from `effectOf`).
   */
  readonly learns?: {
    readonly limit: number;
    readonly windowMs: number;
    readonly of: number;
    /** The window was inferred from a reset (see `SharedLearned.inferred`). */
    readonly inferred?: true;
  };
  /**
   * How long the answer of a count or a policy took (ms), when the signal says when its request
   * was sent: the learned policy of its unit is spaced by it (see `heardRoundTrip`).
   */
  readonly roundTripMs?: number;
  /**
   * A refusal: the key's shared rate is made, cut or held (see `SharedRate`), by AIMD without a
   * wait, from what was admitted before it with one (`refusedWithWait`; `blockMs` is the wait).
   */
  readonly refused?: true;
  /**
   * The limit the count is of, when the server names it: a count of a learned policy's limit
   * may show it to be a bucket, and then steers it (shared-counts.ts).
   */
  readonly limit?: number;
}

/**
 * What a server signal does to a shared bucket: the count it lowers the credit to, how long it
 * blocks the key (ms from now), and the policy it teaches every client (in the signal's unit:
 * see `effectOn`). A refusal without Retry-After says that nothing is left. A policy beyond what
 * a store learns teaches nothing here. A rate taught by refusals, a slow start and a probe are
 * each pacer's: they are measured from its own requests.
 */
export function effectOf(signal: ServerSignal): SignalEffect {
  if (signal.kind === 'refusal') {
    const wait = serverDelay(signal.retryAfterMs);
    return wait === undefined
      ? { remaining: 0, blockMs: 0, refused: true }
      : { remaining: undefined, blockMs: wait, refused: true };
  }
  if (signal.kind === 'answered') {
    // An answer's round trip spreads the key's spaced policies (`spreadAt`).
    const { sentAt } = signal;
    return sentAt !== undefined && sentAt < 0
      ? { remaining: undefined, blockMs: 0, roundTripMs: -sentAt }
      : { remaining: undefined, blockMs: 0 };
  }
  if (signal.kind !== 'quota' && signal.kind !== 'policy')
    return { remaining: undefined, blockMs: 0 };
  const { remaining, sentAt } = signal;
  const reset = serverDelay(signal.resetMs) ?? 0;
  // `sentAt` comes relative to now (the store contract).
  const heard = sentAt !== undefined && sentAt < 0 ? { roundTripMs: -sentAt } : {};
  const named = isCountable(signal.limit) ? { limit: signal.limit as number } : {};
  const effect = { remaining, blockMs: remaining === 0 ? reset : 0, ...heard, ...named };
  if (signal.kind !== 'policy') return effect;
  const { limit, windowMs } = signal;
  if (!isLearnable(limit, windowMs)) return effect;
  const inferred = signal.inferred === true ? { inferred: true as const } : {};
  return { ...effect, learns: { limit, windowMs, of: 0, ...inferred } };
}

/**
 * Applies a server signal to `state` at `now` (shared ms), as `effectOf` says: a count to the
 * policies of its unit (`units`: see `policiesOfUnit`), and nothing at all from a count in a
 * unit the key does not count (a tokens count of 0 must not block a key paced on requests).
 */
export function observe(
  state: BucketState,
  limits: Limits,
  now: number,
  signal: ServerSignal,
  units?: readonly string[],
  heldMs = 0,
): void {
  const effect = effectOn(signal, limits.length, units, heldMs);
  if (effect === undefined) return;
  const { remaining, blockMs, learns, which, roundTripMs, limit } = effect;
  if (
    learns !== undefined &&
    !(learns.inferred === true && countsOwn(limits[learns.of], learns.limit, learns.windowMs))
  ) {
    const fresh = learn(state, now, learns.limit, learns.windowMs, learns.of, learns.inferred);
    if (fresh?.inferred === true) foundByAdmissions(fresh, state.admissions, now, ownPerMs(limits));
  }
  if (roundTripMs !== undefined) {
    // A learned policy is spaced by the answers that state it or its count (`SharedLearned`).
    if (signal.kind !== 'answered') heardRoundTrip(state, now, which[0] as number, roundTripMs);
    spreadAt(state, limits, now, roundTripMs, true);
  }
  // Before the count lowers anything (the Redis store's order: 'a', 'b', 'l').
  if (
    blockMs > 0 &&
    (effect.refused === true || !agreesAtZero(state, limits, now, which, limit, roundTripMs))
  ) {
    block(state, now + blockMs);
  }
  if (remaining !== undefined) lower(state, limits, now, remaining, which);
  if (remaining !== undefined && limit !== undefined) {
    countHeard(state, limits, now, remaining, limit, now - (roundTripMs ?? 0), which[0] as number);
  }
  if (effect.refused === true) {
    // `sentAt` comes relative to now (the store contract), or not at all: sent now.
    const ago = (signal as { readonly sentAt?: number }).sentAt;
    rateRefused(state, limits, now, ago !== undefined && ago < 0 ? now + ago : now, blockMs);
  }
}

/**
 * Whether `named` (a server's limit) is the burst `policy` was told (its capacity, not its
 * limit): a GCRA that names its burst as its limit (redis-gcra, throttled, redis-cell), whose
 * whole-second resets read as a window of the burst per second. The key's own GCRA of that burst
 * counts it, as a pacer's does (`isOwnBurst` in core/learning.ts), so no window inferred of it
 * is learned: learned, it spaced three processes on one store told `perSecond(60, { burst: 15
 * })` at 15 per second (300 calls in 19.8-20.5 s against a simulated one, where 4.75 s is
 * ideal; 5.8 s found as a bucket by its counts, 4.8 s so).
 */
function namesOwnBurst(policy: ResolvedPolicy | undefined, named: number): boolean {
  if (policy === undefined) return false;
  const { capacity, limit } = policy;
  return capacity >= 2 && capacity !== limit && capacity === named;
}

/**
 * Whether the key's own `policy` counts a window of `named` per `windowMs` inferred from a reset
 * already: its burst (`namesOwnBurst`), or its own limit over a window no longer (within the
 * tenth an inferred window wobbles by, as `learn` takes one for the same). Learned as well, the
 * window spaced every client by half a round trip more per window, and then kept no late
 * client's credit (`LearnedPart`): three processes on one store told the published 60 per second of
 * @fastify/rate-limit, koa-ratelimit or rate-limiter-flexible ran at 0.87-0.88x of it through
 * 5-60 ms of jitter, where one saying only `retry-after` ran at 0.92x. A pacer's inferred window
 * of its own limit confirms its policy the same way (`applySignal` in core/learning.ts).
 */
function countsOwn(policy: ResolvedPolicy | undefined, named: number, windowMs: number): boolean {
  if (policy === undefined) return false;
  if (namesOwnBurst(policy, named)) return true;
  return policy.limit === named && windowMs <= policy.windowMs + policy.windowMs / 10;
}

/**
 * The server counted `remaining` of a `limit` it named, answering at `now` a request sent at
 * `sentAt`, in the unit whose first policy is `of`: a count of the learned policy's limit may
 * show it to be a bucket, and then steers it (shared-counts.ts). A key that a shared rate paces
 * and that learned no policy (a server that names its limit but never said a count that opens a
 * window: redis-gcra's floats say 3 of a full 5) keeps its counts with the rate, looked at over
 * the window the rate takes for that limit (a second at least); a bucket found, it learns the
 * limit over that window, found to be a bucket, and the shared rate is dropped: a refusal's
 * whole-second wait read as a window (a GCRA's wait rounded up) taught a sixth of its rate, and
 * the counts steer the key now.
 */
function countHeard(
  state: BucketState,
  limits: Limits,
  now: number,
  remaining: number,
  limit: number,
  sentAt: number,
  of: number,
): void {
  const learned = state.learned?.find((each) => each.of === of);
  const { rate } = state;
  if (of === 0 && rate !== undefined && namesOwnBurst(limits[0], limit)) {
    // The key's own GCRA of that burst counts the server's bucket: a refusal of it taught a
    // burst per second (redis-gcra's floats admit 4 of a full 5 at once at times, and say
    // `Retry-After: 1`): 300 calls in 8.9 s straight to it, 6.8 s dropped so (4.9 s is ideal).
    delete state.rate;
    return;
  }
  if (learned === undefined && of === 0 && rate !== undefined) {
    // Looked at over a second at least: a rate a whole-second wait taught is of a server that
    // counts whole seconds.
    const windowMs = Math.max(1, limit / rateAt(rate, now));
    const lookMs = windowMs > RATE_WINDOW_MS ? windowMs : RATE_WINDOW_MS;
    if (!showsBucket(rate, limit, now, remaining, sentAt, lookMs)) return;
    learn(state, now, limit, windowMs, 0, true);
    const found = state.learned?.[0] as SharedLearned;
    found.countedAt = now;
    delete state.rate;
    return;
  }
  if (learned?.limit !== limit) return;
  const looking = learned.countedAt === undefined;
  heardCount(learned, now, remaining, sentAt, ownPerMs(limits));
  if (looking && learned.countedAt !== undefined) delete state.rate;
}

/**
 * A refusal of the key at `now` of a request sent at `sentAt` (shared ms) that said to wait
 * `waitMs` (0: a bare refusal): its shared rate is made, cut or held (`SharedRate`).
 */
function rateRefused(
  state: BucketState,
  limits: Limits,
  now: number,
  sentAt = now,
  waitMs = 0,
): void {
  // A bucket's counts steer the key: a refusal halves it (once per change), and teaches no rate.
  const learned = state.learned?.[0];
  if (learned?.of === 0 && learned.countedAt !== undefined) {
    refusedCount(learned, now, sentAt);
    return;
  }
  state.admissions ??= noAdmissions(now);
  const { rate, admissions } = state;
  const own = ownPerMs(limits);
  const next =
    waitMs > 0
      ? refusedWithWait(rate, admissions, now, own, sentAt, waitMs)
      : refused(rate, admissions, now, own, sentAt);
  if (next === undefined) delete state.rate;
  else state.rate = next;
}

/**
 * `effectOf(signal)` for a key of `count` policies in `units` (see `policiesOfUnit`), with the
 * policies its count lowers (`which`); undefined when it changes nothing of the key, as a count
 * in a unit the key does not count. A refusal names no unit: it is the main unit's, as in the
 * core.
 */
export function effectOn(
  signal: ServerSignal,
  count: number,
  units: readonly string[] | undefined,
  heldMs = 0,
): (SignalEffect & { readonly which: readonly number[] }) | undefined {
  const which = policiesOfUnit(units, count, 'unit' in signal ? signal.unit : undefined);
  if (which.length === 0) return undefined;
  const effect = effectOf(signal);
  const { remaining, blockMs, learns, roundTripMs } = effect;
  // An answer that said nothing else tells its round trip only when it is the longest its
  // client holds (`heldMs`, `StoreCall.roundTripMs`): a store call for a longer one, not for
  // every answer.
  const tells = roundTripMs !== undefined && roundTripMs >= heldMs;
  if (remaining === undefined && blockMs === 0 && learns === undefined && !tells) return undefined;
  // A policy in a unit counts that unit's amounts: those of its first policy.
  const of = which[0] as number;
  return learns === undefined
    ? { ...effect, which }
    : { ...effect, learns: { ...learns, of }, which };
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
  // What was admitted is kept for the rate a first refusal makes: a key whose own policy rests
  // between its grants (a GCRA of 600 per second, 2 ms after each) forgot them all in Redis.
  const admitted = state.admissions === undefined ? at : state.admissions.at + AIMD.ADMISSIONS_MS;
  if (admitted > at) at = admitted;
  // A round trip told is kept two of the key's longest windows (`spreadAt`): the first takes
  // after a pause are spread by it, before their answers tell it again.
  if (state.roundTripAt !== undefined) {
    const kept = state.roundTripAt + 2 * longestWindow(limits);
    if (kept > at) at = kept;
  }
  for (const part of parts(state, limits)) {
    const rests = part.restsAt(now);
    if (rests > at) at = rests;
  }
  return at;
}
