/**
 * A shared learned policy whose counts show a bucket: what a store makes of the counts its
 * clients hear of the limit it learned (`SharedLearned` in bucket-state.ts).
 *
 * A store learns a window from the answer that opened it (`X-RateLimit-Limit: 5`, a reset of
 * `1`, 4 left: 5 per second) and spaces every client's permits by it. A GCRA named by its burst
 * (redis-gcra, throttled, redis-cell) says the same of its bucket of 5 refilled at 60 per second:
 * its reset is when the bucket is full again, rounded up to a second. Spaced at 5 per second,
 * three processes on one store ran at 0.08-0.27x of such a server's rate for good (`DIALECT=x-
 * ratelimit-delta npm run measure:store`; 0.09-0.52x against the real redis-gcra, `npm run
 * bench:servers:store`). A lone pacer tells the bucket by its counts (`countsShowBucket` in
 * core/learning.ts) and goes by a `CountedBucket`; a store hears its clients' answers in no order
 * and keeps a few plain numbers per key (the Redis script too), so it does less:
 *
 * - **Found** as the pacer finds it, in a window that was inferred (a server that states its
 *   window is believed, as by a pacer): `2j + 1` answers that left at least `limit - j` (j of 1 or
 *   2), from the first one's send to the last one's answer within the learned window. No window
 *   of `limit` counts so (in a sliding log the last of them would count them all; fixed windows
 *   put at most one window's end in the span), a bucket does: it refilled faster than the window
 *   says. Or found at once, as its window is inferred, if the key's clients were admitted at more
 *   than twice its rate over about the last second (`foundByAdmissions`), and paced from that
 *   rate: a GCRA's reset in whole Unix seconds opens a window only when a count comes just after
 *   a second begins, which may be seconds in. Three processes on one store told the published 60
 *   per second (no burst) ran at 55 per second until one did, at the 6 per second of the window
 *   inferred then, and their counts took 1.5 s to find the bucket and speed it back up
 *   (`GENEROUS=1 ONLY=gcra DIALECT=x-ratelimit npm run measure:store` through 5-60 ms, seeds
 *   1-8: 0.58-0.86x of the rate after two windows against a bucket of 6; 0.82-0.86x found so).
 * - **Then steered by its counts**, of requests sent after its last cut (one sent before was
 *   paced faster, and its requests in flight would cut it again and again): a count that found
 *   the bucket full (`fullCount`: redis-gcra's floats say 3 of a full 5), while its clients pace
 *   into it (`busyAt`), speeds it up, a bucket's
 *   worth of them doubles it until the counts first say it is not full, then grows it by a tenth
 *   (`FAST`, `GROW`: each count by `1 + FAST / limit`, arithmetic that Lua computes to the same
 *   bit; grown by half at each count, straight to redis-gcra, the rate passed four times the
 *   server's before the counts of a drained bucket came back); one of half the bucket or less
 *   cuts it
 *   (halved the first time, by `CUT` after), as does a refusal (halved); a count cuts only if it
 *   is lower than the one that last cut (`cutCount`), until a full count. Cut at each count of
 *   a drain, the counts that came while the bucket refilled cut it on and on: three processes on
 *   one store, 10x generous, against simulated GCRAs of 60 per second saying their counts
 *   (`DIALECT=x-ratelimit-delta npm run measure:store`, seeds 1-3) ran at 0.88-0.91x of the rate
 *   after two windows at 0-3 ms (a bucket of 16 or 6), 0.73-0.75x (redis-gcra's float counts),
 *   and at 0.99-1.01x and 0.79-0.82x so. Cut only at a count of 1
 *   or none, as `CountedBucket` cuts, a bucket of 5 or 16 drained through 5-60 ms of jitter, and
 *   the refusals that followed blocked every client for the server's whole-second `Retry-After`
 *   (the simulated GCRAs of `measure:store` through the jitter, seeds 1-3: 0.45-0.93x of their
 *   rate after two windows, up to 6 refusals after them; cut at half the bucket, 0.70-1.00x, at
 *   most one).
 * - The rate never passes the key's own, nor falls below one permit per `AIMD.FLOOR_MS`, and
 *   the window stays learned against the same limit's windows inferred again (each answer that
 *   opens one says a second).
 */
import { AIMD } from '../core/adaptive-rate.js';
import { fullRunFrom } from '../core/full-run.js';
import type { SharedLearned } from './bucket-state.js';
import { recentPerMs, type SharedAdmissions } from './shared-rate.js';

/** How the counts steer a learned policy found to be a bucket (see the module's doc). */
export const COUNTED_SHARED = /* @__PURE__ */ Object.freeze({
  /**
   * Each full count grows the rate by `1 + GROW / limit` after its first cut, so a bucket's worth
   * of them by about e^GROW (1.1x)...
   */
  GROW: 0.1,
  /** ...and by `1 + FAST / limit` before, until a count says it is not full (2x a bucket). */
  FAST: 0.7,
  /** A count of half the bucket or less cuts it by this (halves it the first time). */
  CUT: 0.9,
  /**
   * Past the first cut, a count of half the bucket or less cuts it only after this many in a
   * row. Through 5-60 ms of jitter each way, arrivals bunch by up to 55 ms, three permits of a
   * GCRA of 60 per second: a bucket of 5 paced at its rate says 2 of a full 3 now and then, and
   * cut at each such count, three processes on one store ran at 0.78-0.85x of its rate after two
   * windows (nginx-like integer counts, seeds 1-8), 0.71-0.84x of redis-gcra's; at two in a row,
   * 0.86-0.93x and 0.76-0.94x, no refusal more there. Over the eight dialects of `measure:store`
   * (seeds 1-3) one refusal after two windows came where none had: redis-gcra's float counts with
   * fractional resets through the jitter, in one seed.
   */
  LOW_RUN: 2,
  /**
   * A count no lower than the one that last cut (`cutCount`) cuts again if its request was sent
   * this many learned windows after that cut: the bucket did not refill.
   */
  DRAIN_WINDOWS: 2,
  /** Pairs of (send, count) kept while looking for a bucket: `2j + 1` for j of 2. */
  KEPT: 5,
  /** ms a learned bucket is kept after its last use, as `CountedBucket` keeps a quiet one. */
  FORGET_MS: 10_000,
  /** How many times a window's rate the key's admissions disprove it by (`foundByAdmissions`). */
  DISPROVED: 2,
});

/** The least count a full bucket of `limit` says (see the module's doc). */
function fullCount(limit: number): number {
  return limit >= 5 ? limit - 2 : limit - 1;
}

/**
 * The server counted `remaining` of `learned`'s limit, answering at `now` a request sent at
 * `sentAt` (shared ms): looks for a bucket, or steers the one found (see the module's doc).
 * `fastestPerMs`: the key's own rate, which the learned one never passes.
 */
export function heardCount(
  learned: SharedLearned,
  now: number,
  remaining: number,
  sentAt: number,
  fastestPerMs: number,
): void {
  const { limit } = learned;
  if (limit < 3 || !(remaining >= 0)) return;
  const { countedAt } = learned;
  if (countedAt === undefined) {
    if (learned.inferred !== true) return;
    if (showsBucket(learned, limit, now, remaining, sentAt, learned.windowMs)) {
      learned.countedAt = now;
    }
    return;
  }
  if (!(sentAt > countedAt)) return;
  const cuts = learned.cuts ?? 0;
  const lowRun = remaining > limit / 2 ? 0 : (learned.lowRun ?? 0) + 1;
  if (lowRun > 0) learned.lowRun = lowRun;
  else delete learned.lowRun;
  if (remaining >= fullCount(limit)) {
    // Only while its clients paced into it: sent slower (an app with little to send), every
    // count is full, and grown so to the key's own rate, a burst that came later went at it
    // (three paced fetches on one store, 10x generous, 10 s at 10 per second before 300 calls
    // at once to a simulated GCRA of 60 per second through 5-60 ms of jitter: 29 refusals).
    const { busyAt } = learned;
    delete learned.cutCount;
    if (busyAt === undefined || busyAt < sentAt - learned.windowMs / limit) return;
    const by = 1 + (cuts === 0 ? COUNTED_SHARED.FAST : COUNTED_SHARED.GROW) / limit;
    const fastest = Math.max(1, limit / fastestPerMs);
    learned.windowMs = Math.max(fastest, learned.windowMs / by);
  } else if (remaining > limit / 2) {
    // Not full: the fast growth is over.
    if (cuts === 0) learned.cuts = 1;
  } else if (
    (cuts === 0 || lowRun >= COUNTED_SHARED.LOW_RUN) &&
    (learned.cutCount === undefined ||
      remaining < learned.cutCount ||
      sentAt > countedAt + COUNTED_SHARED.DRAIN_WINDOWS * learned.windowMs)
  ) {
    // Once per drain: the counts after a cut stay as low while the bucket refills (slowly: the
    // key sends at nearly its rate), and cut at each, a GCRA of 5 at 60 per second went from
    // 9 ms a permit (too fast) to 25 ms in four counts, where the first cut's 18 ms held. Still
    // as low `DRAIN_WINDOWS` after the cut, it drains again. And past the first cut, a low
    // count alone is the jitter's: arrivals bunched by it find a bucket paced at its rate low
    // now and then (see `LOW_RUN`).
    cut(learned, now, cuts === 0 ? 2 : 1 / COUNTED_SHARED.CUT);
    learned.cutCount = remaining;
  }
}

/** Slows a learned bucket at `now` by `by` (see the module's doc). */
function cut(learned: SharedLearned, now: number, by: number): void {
  learned.windowMs = Math.min(learned.limit * AIMD.FLOOR_MS, learned.windowMs * by);
  learned.cuts = (learned.cuts ?? 0) + 1;
  learned.countedAt = now;
}

/**
 * A window of `learned.limit` (the main unit's) just inferred from a reset, while the key's
 * clients were admitted more than `DISPROVED` times its rate over about the last second
 * (`admissions`: granted less refused) is no window, which admits no more than its limit in any
 * of its spans (a fixed one twice that across its edge): it is found to be a bucket, paced from
 * the rate admitted (`ownPerMs` at most), which its counts steer from there (see the module's
 * doc).
 */
export function foundByAdmissions(
  learned: SharedLearned,
  admissions: SharedAdmissions | undefined,
  now: number,
  ownPerMs: number,
): void {
  if (admissions === undefined || learned.of !== 0 || learned.limit < 3) return;
  const recent = recentPerMs(admissions, now);
  const perMs = recent < ownPerMs ? recent : ownPerMs;
  if (!(perMs * learned.windowMs > COUNTED_SHARED.DISPROVED * learned.limit)) return;
  learned.windowMs = learned.limit / perMs;
  learned.countedAt = now;
}

/**
 * A refusal of a request of a learned bucket sent at `sentAt`: halves its rate, once per change
 * (see `heardCount`).
 */
export function refusedCount(learned: SharedLearned, now: number, sentAt: number): void {
  const { countedAt } = learned;
  if (countedAt !== undefined && sentAt > countedAt) cut(learned, now, 2);
}

/** The full counts `found` (read back from storage) keeps, checked, into `kept`. */
export function keepHighs(found: Partial<KeepsCounts>, kept: KeepsCounts): void {
  const { highs } = found;
  if (
    Array.isArray(highs) &&
    highs.length % 2 === 0 &&
    highs.length <= 2 * COUNTED_SHARED.KEPT &&
    highs.every(Number.isFinite)
  ) {
    kept.highs = [...highs];
  }
}

/** What a learned policy `found` (read back from storage) holds of its counts, into `kept`. */
export function keepCounts(found: Partial<SharedLearned>, kept: SharedLearned): void {
  keepHighs(found, kept);
  const { countedAt, cuts, inferred, busyAt, cutCount, lowRun } = found;
  if (Number.isFinite(countedAt)) kept.countedAt = countedAt as number;
  if (Number.isInteger(cuts) && (cuts as number) > 0) kept.cuts = cuts as number;
  if (inferred === true) kept.inferred = true;
  if (Number.isFinite(busyAt)) kept.busyAt = busyAt as number;
  if (Number.isFinite(cutCount)) kept.cutCount = cutCount as number;
  if (Number.isInteger(lowRun) && (lowRun as number) > 0) kept.lowRun = lowRun as number;
}

/** What keeps the full counts heard while no bucket is found: a learned policy, a shared rate. */
export interface KeepsCounts {
  highs?: number[];
}

/**
 * Keeps a count of `remaining` of `limit` (a request sent at `sentAt`, answered at `now`, shared
 * ms) in `keeper` if it left at least `limit - 2`, and says whether the counts kept show a
 * bucket within `windowMs` (see the module's doc); they are dropped then.
 */
export function showsBucket(
  keeper: KeepsCounts,
  limit: number,
  now: number,
  remaining: number,
  sentAt: number,
  windowMs: number,
): boolean {
  if (limit < 3 || remaining < limit - 2) return false;
  const highs = keeper.highs ?? [];
  highs.push(sentAt, remaining);
  if (highs.length > 2 * COUNTED_SHARED.KEPT) highs.splice(0, 2);
  keeper.highs = highs;
  if (fullRunFrom(highs, 2, limit, now, windowMs) === undefined) return false;
  delete keeper.highs;
  return true;
}
