import type { Strategy } from './algorithms/strategy.js';
import { AdaptiveRate } from './adaptive-rate.js';
import { inUseOf } from './algorithms/strategy.js';
import { CountedBucket } from './counted-bucket.js';
import { fullRunFrom } from './full-run.js';
import { EPSILON } from './decision.js';
import { type LearnedLimit, WithLearned } from './learned.js';
import {
  adopt,
  endSlowStart,
  forget,
  type KeyStates,
  MAX_LOGGED,
  ownPolicy,
  retime,
} from './learned-policy.js';
import { admittedLate, grow, refused } from './refusals.js';
import { type PolicySignal, type QuotaSignal, type ServerSignal, serverDelay } from './signal.js';
import { SlowStart } from './slow-start.js';

export { AdaptiveRate, AIMD } from './adaptive-rate.js';
export type { KeyStates } from './learned-policy.js';

/**
 * What a signal of the server does to `key` (checked by `assertSignal`) at `now`:
 *
 * - `quota`: the local credit is lowered to at most `remaining` (never raised), and with
 *   nothing remaining the key is blocked for `resetMs`;
 * - `policy`: the key adopts `limit` per `windowMs` as its learned policy (exact: never more
 *   than `limit` in any window), `remaining` is that policy's count, and the block ends no
 *   later than one window after the answer that opened the server's window (the one that said
 *   `limit - 1`): a reset in whole seconds would hold the key up to a second too long;
 * - `refusal`: with `retryAfterMs` the key is blocked that long; without, AIMD (`refused`);
 * - `probe`: the key is held to the probe's policy, unless it learned one already;
 * - `answered`: a probe's policy is dropped (any other learned policy stays).
 *
 * Every delay is cut to `MAX_DELAY_MS`, every learned window too.
 */
export function applySignal(
  states: KeyStates,
  key: string,
  now: number,
  signal: ServerSignal,
): void {
  switch (signal.kind) {
    case 'refusal': {
      const wait = serverDelay(signal.retryAfterMs);
      if (wait !== undefined && wait > 0) states.blockUntil(key, now + wait);
      const counted = countedBucketOf(states, key);
      if (counted !== undefined) {
        counted.refused(now);
        showRate(states, key, counted);
      }
      refused(states, key, now, wait, signal.sentAt ?? now, signal.attempt ?? 0);
      return;
    }
    case 'probe': {
      const state = states.stateOf(key);
      if (state instanceof WithLearned && state.learned !== undefined) return;
      adopt(states, key, now, signal.limit, signal.windowMs, 'client');
      return;
    }
    case 'start': {
      const state = states.stateFor(key, now);
      // A key that learned anything (or whose slow start ended) has been heard from: only a
      // key new or at rest starts slow. Sent at every call, so it must not restart one.
      if (state === undefined || state instanceof WithLearned) return;
      const learned: LearnedLimit = {
        counter: new SlowStart(),
        policy: { limit: 1, windowMs: 0, source: 'start' },
        openedAt: Number.NEGATIVE_INFINITY,
      };
      const peakPerMs = states.compiled(key).peakPerMs;
      states.replace(key, new WithLearned(state, learned, peakPerMs, Number.NEGATIVE_INFINITY));
      return;
    }
    case 'answered': {
      const state = states.stateOf(key);
      const sentAt = signal.sentAt ?? now;
      if (state instanceof WithLearned) {
        state.admittedAt = now;
        if (sentAt >= state.busySince) {
          state.busyAdmitted++;
          if (sentAt < state.busyFrom) state.busyFrom = sentAt;
        }
      }
      if (
        state instanceof WithLearned &&
        sentAt >= state.sampleFrom &&
        sentAt < state.lastRefusalAt
      ) {
        admittedLate(state);
      }
      // Counted in a rate's sample only if sent after the last refusal that taught one.
      if (state instanceof WithLearned && sentAt >= state.lastRefusalAt) {
        if (state.admitted++ === 0) state.firstAdmittedAt = sentAt;
        const counter = state.learned?.counter;
        if (counter instanceof SlowStart) {
          counter.grow();
          return;
        }
        if (counter instanceof AdaptiveRate) counter.answered(now, sentAt);
        else if (state.sampled !== undefined) grow(state, now, sentAt);
      }
      forget(states, key, 'client');
      return;
    }
  }
  const { remaining } = signal;
  // A bucket found by its counts goes by its counts alone (see `CountedBucket`): its resets
  // (whole seconds until it is full again) would block the key a second at each count of 0.
  const counted = countedBucketOf(states, key);
  if (counted !== undefined && (signal.kind === 'quota' || signal.inferred === true)) {
    if (remaining !== undefined && signal.limit !== undefined && signal.sentAt !== undefined) {
      counted.heardRoom(now, remaining, signal.limit, signal.sentAt);
      showRate(states, key, counted);
    }
    return;
  }
  // A count of the key's own `burst` (not its limit) is of the bucket that burst is: a GCRA
  // named by its burst, as throttled and redis-cell name theirs, told to the key as its rate and
  // burst. Its reset is when the bucket is full again (in whole seconds), not when a permit
  // frees, and the key's own count of its limit is no count of it: read as a window of the burst
  // (or lowered into the limit's count, a count of 0 filling it), each count of 0 held the key a
  // second, 15-20 a second of 60 against redis-gcra. The key's own bucket counts the burst; the
  // count only caps it (`ArrivalSafe.heardRoom`), and confirms the key's policy as a count of
  // its own limit does: that ends a slow start.
  if (
    (signal.kind === 'quota' || signal.inferred === true) &&
    isOwnBurst(states, key, signal.limit)
  ) {
    confirm(states, key);
    if (remaining !== undefined)
      heardRoom(states, key, now, remaining, signal.limit, signal.sentAt);
    return;
  }
  const reset = serverDelay(signal.resetMs);
  const ends = reset !== undefined && reset > 0 ? now + reset : undefined;
  // The latest the count may reset: a whole-second reset of a count of 0 read as its earliest
  // (0) comes without `resetMs`, and only this says it ends within a second (see below).
  const latest = (signal.kind === 'quota' ? serverDelay(signal.resetAtMostMs) : undefined) ?? reset;
  // An inferred window of the key's own limit confirms its policy: that ends a slow start.
  const confirms =
    signal.kind === 'policy' &&
    signal.inferred === true &&
    states.compiled(key).limit === signal.limit;
  if (confirms) confirm(states, key);
  if (signal.kind === 'policy' && !confirms) {
    const state = states.stateOf(key);
    const refills =
      signal.inferred === true &&
      state instanceof WithLearned &&
      state.resetsRefill &&
      reset !== undefined &&
      remaining !== undefined &&
      remaining < signal.limit;
    // A reset found to be a bucket's refill (one permit's time when one was used): the window
    // is the time to refill the whole limit, as for a bucket the headers name (OpenAI's). Once
    // learned so, it is kept: one permit's reset, less the network delay, times the limit
    // would make it up to 20 times too short.
    const kept = state instanceof WithLearned ? state.learned : undefined;
    const learned =
      refills && kept?.policy.source === 'server' && kept.policy.limit === signal.limit
        ? refined(state, now, remaining, now + reset, aheadFrom(signal, now))
        : adopt(
            states,
            key,
            now,
            signal.limit,
            refills ? (reset * signal.limit) / (signal.limit - remaining) : signal.windowMs,
            'server',
            { bucket: refills || signal.bucket === true },
          );
    if (learned !== undefined) {
      if (remaining === undefined) return;
      const { windowMs } = learned.policy;
      if (remaining === learned.policy.limit - 1) {
        if (signal.inferred === true && !refills && countsShowBucket(states, key, now, signal)) {
          return;
        }
        learned.openedAt = now;
      }
      if (signal.inferred === true && !refills && ends !== undefined) {
        learned.run = { remaining, ends };
      }
      // Permits the log does not know of (another client's) count a whole window from now,
      // unless the server's window resets no later (a fixed window): then only its block holds.
      // A reset of exactly a window is no count that outlasts it: a whole-second `t=1` on a 1 s
      // window (a sliding-window counter's end of window, rounded up) made the gap between its
      // weighted count and the log's a whole window of permits (0.85x of its rate, 0.92x now).
      // The count is its request's round trip old: the key's own permits the log let go since
      // (each counted a window from its answer) may still be in it, as many as the policy frees
      // in that time. Counted as another client's, they held a key told the published limit of
      // a rolling window stated without a reset (HubSpot's) at 0.92x of its rate through 5-60 ms
      // of jitter each way, where it ran at 0.96x with the headers unread.
      if (ends === undefined || ends > now + windowMs) {
        const stale =
          signal.sentAt === undefined
            ? 0
            : Math.ceil(((now - signal.sentAt) * learned.policy.limit) / windowMs);
        learned.counter.lowerRemaining(now, remaining + stale);
      }
      heardRoom(states, key, now, remaining, signal.limit, signal.sentAt);
      if (remaining === 0 && ends !== undefined && hasCredit(states, key, now)) {
        const reopens = learned.openedAt + windowMs;
        states.blockUntil(key, reopens > now && reopens < ends ? reopens : ends);
      }
      return;
    }
  }
  if (remaining === undefined) return;
  if (signal.kind === 'quota') {
    // Counts too high for any window (see `countsShowBucket`), of a key that starts slow, that
    // a refusal taught a rate, or whose window was inferred from a reset that infers none now
    // (a Unix second read against the clock).
    const { limit } = signal;
    if (
      limit !== undefined &&
      mayBeBucket(states, key, limit) &&
      countsShowBucket(states, key, now, signal)
    ) {
      return;
    }
    nameLimit(states.stateOf(key), signal.limit);
    // A pacer that hears every answer is confirmed by the count of the one that opened the
    // server's window, as by the window inferred from it: a reset too coarse to infer one from
    // (Unix seconds) kept its slow start, held to the server's counts, for good (0.83x of a
    // sliding log's rate through 5-60 ms of jitter, where a finer reset ran at 0.90x).
    if (signal.limit !== undefined && (!states.answered() || remaining === signal.limit - 1)) {
      confirmShared(states, key, signal.limit);
    }
  }
  if (remaining === 0) spentWindow(states.stateOf(key));
  // A count of 0 without a reset of its own is the lowest of its run: the next count starts
  // another. Left out, a sliding-window counter (whose counts carry over its window's end, where
  // its reset moves a window on) read as a bucket after a run of counts that seemed to fall for
  // two windows (a 10x generous client then sent bursts it refused: 24 refusals after two
  // windows).
  if (
    signal.kind === 'quota' &&
    latest !== undefined &&
    latest > 0 &&
    disprovesWindow(states, key, now, remaining, ends ?? now + latest, signal.sentAt)
  ) {
    return;
  }
  if (signal.kind === 'quota' && ends !== undefined) {
    const state = states.stateOf(key);
    if (state instanceof WithLearned && state.resetsRefill) {
      refined(state, now, remaining, ends, aheadFrom(signal, now));
    }
  }
  // Blocked only if the key's own count still had credit: a count that agrees with the
  // server's knows better when the next permit frees (a sliding server's reset is when it is
  // empty again, not when its next permit frees).
  if (remaining === 0 && ends !== undefined && hasCredit(states, key, now)) {
    // The block holds the key until the server counts afresh. Lowered to 0 as well, the key's
    // own count would hold it a whole window of its own: a minute for a server whose window
    // resets in 5 s.
    states.blockUntil(key, ends);
    return;
  }
  // A slow start reads a count by the time its request was sent (`SlowStart.lowerRemaining`).
  const sentAt = signal.kind === 'quota' ? signal.sentAt : undefined;
  // As for a policy above: a count of the limit the key already counts arrival-safe, over a
  // window no shorter than the count's reset, is no count that outlasts it. A sliding-window
  // counter weighs its previous window as if spread evenly, so its count is below the key's
  // own of the same requests: lowered into the log for a whole window, that gap held the key
  // to 0.85x of its rate through 5-60 ms of jitter (0.91-0.92x now, as with the headers
  // ignored; with whole-second resets, until their counts of 0 were read by their latest
  // reset, 0.88x). A count below the key's own still blocks it at 0 (above).
  if (latest !== undefined && latest > 0 && countsItsWindow(states, key, signal.limit, latest)) {
    heardRoom(states, key, now, remaining, signal.limit, signal.sentAt);
    return;
  }
  const state = states.stateFor(key, now);
  const counter = state instanceof WithLearned ? state.learned?.counter : undefined;
  if (
    counter instanceof SlowStart &&
    signal.limit !== undefined &&
    ownPolicy(states, key, signal.limit) === undefined
  ) {
    // A slow start told a count of a limit the key does not count: the slow start holds the
    // key to it. Lowered into the key's own count as well (its limit per its window), a count
    // of 0 from a bucket of 5 held a key of 600 per second a whole second each time, and a slow
    // start 1-3 ms from redis-gcra ran at 5 per second for good (0.08x). (Past a slow start the
    // key's own count still takes it: a learned bucket's count alone let a 10x generous key
    // through to nginx-like GCRAs 40-277 times.)
    counter.lowerRemaining(now, remaining, sentAt);
  } else if (
    // A count of a bucket the key found by its resets (`disprovesWindow`) is that bucket's, which
    // knows when its next permit frees. Lowered into the key's own count as well, a count of 0
    // held a key of 600 per second a whole second (a GCRA of 60 per second, burst 16, with
    // fractional Unix resets, through 5-60 ms of jitter: 1.28-1.39x the ideal time, 1.15-1.23x
    // so). Only a bucket so found: a window that was none and stood, counted alone, let a key
    // through 40-277 times (above).
    state instanceof WithLearned &&
    state.resetsRefill &&
    state.learned?.policy.source === 'server' &&
    state.learned.policy.limit === signal.limit
  ) {
    state.learned.counter.lowerRemaining(now, remaining, sentAt);
  } else {
    // What the count lowers holds until its reset (the latest it may be), no longer: a count of
    // 0 of redis-gcra's bucket of 5, full again 83 ms on, held a key of 600 per second (and the
    // rate its first refusal taught) a window each time, 6.72x the ideal time on loopback.
    const backAt = latest !== undefined && latest > 0 ? now + latest : undefined;
    state?.lowerRemaining(now, remaining, sentAt, backAt);
  }
  heardRoom(states, key, now, remaining, signal.limit, signal.sentAt);
}

/**
 * Whether `key` counts `limit` per a window of at least `resetMs` arrival-safe: as its learned
 * policy of the server's, or as a policy of its own.
 */
function countsItsWindow(
  states: KeyStates,
  key: string,
  limit: number | undefined,
  resetMs: number,
): boolean {
  const state = states.stateOf(key);
  const learned = state instanceof WithLearned ? state.learned?.policy : undefined;
  if (learned?.source === 'server' && learned.limit === limit) return learned.windowMs >= resetMs;
  const own = ownPolicy(states, key, limit);
  return own?.algorithm === 'arrival-safe' && own.windowMs >= resetMs;
}

/** Whether `limit` is the `burst` of one of `key`'s own policies, and not its limit. */
function isOwnBurst(states: KeyStates, key: string, limit: number | undefined): boolean {
  if (limit === undefined) return false;
  return states
    .compiled(key)
    .policies.some((policy) => policy.burst === limit && policy.limit !== limit);
}

/**
 * A count of the server's (`remaining` of `limit`, of a request sent at `sentAt`) is room for
 * the key's arrival-safe counts of that limit (`ArrivalSafe.heardRoom`), when both are known.
 */
function heardRoom(
  states: KeyStates,
  key: string,
  now: number,
  remaining: number,
  limit: number | undefined,
  sentAt: number | undefined,
): void {
  if (limit === undefined || sentAt === undefined) return;
  states.stateOf(key)?.heardRoom?.(now, remaining, limit, sentAt);
}

/**
 * Whether a count of `key` (`remaining`, the server resetting at `ends`) shows that the window
 * its learned policy inferred from a reset was none: within one window the counts fell, yet the
 * reset moved later by more than the window and a half and the answer's round trip (network
 * delay and a whole-second reset's rounding move it less). A bucket's reset is when it is full
 * again, one permit's time per permit used (a GCRA: 50 ms for 20 per second after one request, read as a window of
 * 20 per 50 ms). The policy is then learned again as a bucket of the time to refill the whole
 * limit, and so is every window inferred for the key later (`resetsRefill`).
 */
function disprovesWindow(
  states: KeyStates,
  key: string,
  now: number,
  remaining: number,
  ends: number,
  sentAt: number | undefined,
): boolean {
  const state = states.stateOf(key);
  if (!(state instanceof WithLearned)) return false;
  const { learned } = state;
  const run = learned?.run;
  if (learned === undefined || run === undefined) return false;
  if (remaining >= run.remaining) {
    // A new window (or answers out of order): a new run.
    learned.run = { remaining, ends };
    return false;
  }
  run.remaining = remaining;
  const { limit, windowMs } = learned.policy;
  // A reset read as a delta from the answer is late by at most the answer's round trip (the
  // server counted the request somewhere between its send and its answer), an absolute one not
  // at all: so a window's reset, which does not move, moves by no more than that. A flat 100 ms
  // let a GCRA of a burst of 6 at 60 per second stand as a window of 6 per 17 ms on loopback
  // (its six counts move the reset 83 ms), and each count of 0 held the key a second (10x the
  // ideal time; 1.02-1.20x now, test/http/paced-fetch-bucket-reset.test.ts).
  const slackMs = sentAt === undefined ? 100 : now - sentAt;
  if (ends - run.ends <= 1.5 * windowMs + slackMs) return false;
  state.resetsRefill = true;
  learned.run = undefined;
  // The bound when this count gives one; else the count's own estimate, which the next
  // counts bound (see `refined`).
  const bound = refillBound(limit, remaining, ends, sentAt, now);
  if (bound !== undefined) state.refillMs = bound;
  const windowOfLimit = bound ?? ((ends - now) * limit) / (limit - remaining);
  adopt(states, key, now, limit, windowOfLimit, 'server', { bucket: true });
  return true;
}

/**
 * Whether the answers of `key` disprove every window of the `limit` they name: `2j + 1` of
 * them that left at least `limit - j`, for j of 1 or 2, from the first one's send to the last
 * one's answer (their arrivals lie within it) shorter than a window. In a sliding log the last
 * of them would count them all; in fixed windows (or a sliding-window counter, which weighs the
 * current window whole) at most one window's end falls in the span, so one window counts half
 * of them, more than `j`. The window is the one the key inferred from a reset, the one a rate
 * a refusal taught takes for that limit, or a second for a key that starts slow (servers set
 * whole seconds). So
 * the server counts with a bucket that deep, full (or nearly: redis-gcra's float arithmetic says
 * `limit - 2` of a full bucket at 60 per second) at each: a GCRA named by its burst, as
 * throttled and redis-cell name theirs, with whole-second resets. Learned as a window of its
 * burst per second, a GCRA of ten times that ran at 0.10x; one whose counts never said
 * `limit - 1` kept its slow start, or the rate its first refusal taught.
 *
 * The key then goes by the bucket's counts (`CountedBucket`), in a pacer, which hears every
 * answer; a store's clients keep what they had.
 */
function countsShowBucket(
  states: KeyStates,
  key: string,
  now: number,
  signal: {
    readonly limit?: number | undefined;
    readonly remaining?: number | undefined;
    readonly sentAt?: number | undefined;
  },
): boolean {
  const state = states.stateOf(key);
  if (!(state instanceof WithLearned) || !states.answered()) return false;
  const { learned } = state;
  const { limit, remaining, sentAt } = signal;
  if (learned === undefined || sentAt === undefined || limit === undefined) return false;
  if (remaining === undefined || limit < 2 || remaining < limit - 2) return false;
  // A key whose own limit is the one named keeps its own policy, as for an inferred window.
  if (states.compiled(key).limit === limit) return false;
  // The window of the named limit at the learned rate: a rate a refusal taught from a sample
  // of another size (4 of a bucket of 5 at once, its `Retry-After: 1` a second) paces fewer
  // than the limit per its own window, and no `2j + 1` answers would ever fall within it.
  const { policy } = learned;
  const windowMs =
    learned.counter instanceof SlowStart ? 1_000 : (policy.windowMs * limit) / policy.limit;
  // The last answers that left at least `limit - 2`: send, answer and count of each.
  const kept = learned.openings ?? [];
  kept.push(sentAt, now, remaining);
  if (kept.length > 15) kept.splice(0, 3);
  learned.openings = kept;
  const first = fullRunFrom(kept, 3, limit, now, windowMs);
  if (first === undefined) return false;
  // A permit at least refilled over the span (the bucket stayed nearly full), until the counts
  // prove more; the permits in flight of the count before may arrive after any count.
  const open = inUseOf(learned.counter, now, 0);
  const bucket = new CountedBucket(limit, now, open, 1 / Math.max(1, now - first));
  for (let at = 0; at < kept.length - 3; at += 3) {
    bucket.remember(kept[at + 1] as number, kept[at] as number, kept[at + 2] as number);
  }
  bucket.heardRoom(now, remaining, limit, sentAt);
  // The stand-ins of the counts before, in the key's own count (`ArrivalSafe.lowerRemaining`),
  // hold it until a newer count replaces them, and the counts that found the bucket went here
  // instead: a bucket refills within a permit's time, not a window (redis-gcra-like at a burst
  // of 5, 1-3 ms away, 10x generous: 0.89-0.91x of its rate after two windows with them).
  state.base.withdrawCounts?.();
  state.learned = {
    counter: bucket,
    policy: { limit, windowMs: limit / bucket.perMs, source: 'server' },
    openedAt: now,
  };
  return true;
}

/**
 * Whether `key` learned a window of `limit` inferred from a reset (it keeps a `run`) or a rate
 * taught by a refusal, or starts slow: its answers may show a bucket.
 */
function mayBeBucket(states: KeyStates, key: string, limit: number): boolean {
  const state = states.stateOf(key);
  const learned = state instanceof WithLearned ? state.learned : undefined;
  if (learned?.counter instanceof SlowStart || learned?.policy.source === 'rate') return true;
  return learned?.policy.limit === limit && learned.policy.source === 'server' && !!learned.run;
}

/** What `key`'s learned policy shows of its `CountedBucket`: a window of its rate. */
function showRate(states: KeyStates, key: string, counted: CountedBucket): void {
  const state = states.stateOf(key) as WithLearned;
  const learned = state.learned as LearnedLimit;
  const windowMs = counted.capacity / counted.perMs;
  if (learned.policy.windowMs !== windowMs) {
    state.learned = { ...learned, policy: { ...learned.policy, windowMs } };
  }
}

/** The `CountedBucket` that paces `key`, if one does. */
function countedBucketOf(states: KeyStates, key: string): CountedBucket | undefined {
  const state = states.stateOf(key);
  const counter = state instanceof WithLearned ? state.learned?.counter : undefined;
  return counter instanceof CountedBucket ? counter : undefined;
}

/**
 * The longest window of `limit` a bucket's count allows: `used = limit - remaining` of it
 * spent and full again at `ends`. The server rounds its count down, so a permit refills in more
 * than `ahead / used` and less than `ahead / (used - 1)` ms, `ahead` being the time to full from
 * the request's arrival, counted from `from` (see `aheadFrom`). Undefined below two used, or
 * without a send time.
 */
function refillBound(
  limit: number,
  remaining: number,
  ends: number,
  from: number | undefined,
  now: number,
): number | undefined {
  const used = limit - remaining;
  if (used < 2 || from === undefined || !(from <= now)) return undefined;
  return ((ends - from) * limit) / (used - 1);
}

/**
 * When the `ahead` of a count's reset (see `refillBound`) began, at the latest: the arrival lies
 * between the send and the answer. An absolute reset read at the answer is short of the server's
 * `ahead` by the way back (a GCRA of 20 per second through 5-60 ms of jitter was learned as
 * 906 ms from `ahead / used`, and refused a request a window or two): it counts from the send. A
 * delay is the server's `ahead` itself, and counts from the answer: from the send, each bound
 * was long by the round trip, and a GCRA of 60 per second with a burst of 6 saying
 * rate-limiter-flexible's `Retry-After: 0.083` through 5-60 ms was held to 28 per second.
 */
function aheadFrom(signal: QuotaSignal | PolicySignal, now: number): number | undefined {
  return signal.resetFromArrival === true ? now : signal.sentAt;
}

/**
 * A bucket's learned window (`resetsRefill`) after a count of it: each count bounds it from
 * above (`refillBound`), so once bounded it only shortens, towards the server's, and is never
 * shorter. Returns the learned policy.
 */
function refined(
  state: WithLearned,
  now: number,
  remaining: number,
  ends: number,
  sentAt: number | undefined,
): LearnedLimit | undefined {
  const learned = state.learned;
  if (learned?.policy.source !== 'server') return learned;
  const { limit, windowMs } = learned.policy;
  const bound = refillBound(limit, remaining, ends, sentAt, now);
  if (bound === undefined || !(bound < state.refillMs)) return learned;
  // The first bound replaces an estimate made without one (it may be short); each later one
  // is tighter than the window it bounded.
  state.refillMs = bound;
  if (bound !== windowMs) retime(state, bound);
  return state.learned;
}

/** Keeps the limit a server's count named (see `QuotaSignal.limit`) on a key that learns. */
function nameLimit(state: Strategy | undefined, limit: number | undefined): void {
  if (state instanceof WithLearned && Number.isInteger(limit) && (limit as number) > 0) {
    state.namedLimit = Math.min(limit as number, MAX_LOGGED);
  }
}

/** A count of the server's said nothing remains: a rate a refusal taught must not grow past it. */
function spentWindow(state: Strategy | undefined): void {
  if (state instanceof WithLearned) state.sampled?.spent();
}

/**
 * Whether `key` would still have a whole permit by its own count. A pacer whose store hears the
 * server's counts has none of its own to judge by (the store counts every client's permits, and
 * blocks them all when its count says so): blocked by the pacer too, every pacer on a store
 * against a sliding-window counter stating its policy waited a whole second at each count of 0
 * that its own spacing had reached, as the counter's room grows back at the rate (three pacers,
 * 10x generous, IETF headers, on loopback: 0.57x of the rate after two windows; 0.98x now, with
 * the store's own rule for such a count, `agreesAtZero` in stores/bucket-state.ts).
 */
function hasCredit(states: KeyStates, key: string, now: number): boolean {
  if (states.storeHearsCounts()) return false;
  const state = states.stateOf(key);
  // A slow start counts requests in flight and the server's count, not when a permit frees:
  // only the key's own policy may know that better than the server's reset.
  const counted =
    state instanceof WithLearned && state.learned?.counter instanceof SlowStart
      ? state.base
      : state;
  return counted === undefined || counted.level(now) >= 1 - EPSILON;
}

/**
 * A pacer on a store (it does not hear every answer: `answered()` is false) told a count that
 * names the key's own limit, or any pacer told the count of the answer that opened the server's
 * window: that confirms it, as an inferred window does (see `applySignal`).
 * The store counts that limit for every client, and an inferred window confirms it only to the
 * client that opened the server's window (the one told `limit - 1`): the others stayed in
 * their slow start, held to the server's count that the rest spent, for seconds (three
 * processes on one store against a simulated sliding log through 5-60 ms of jitter, the store
 * asked fairly: 11.8 s for 300 calls, 7.2 s with this).
 */
function confirmShared(states: KeyStates, key: string, limit: number): void {
  if (states.compiled(key).limit === limit) confirm(states, key);
}

/** The server confirmed `key`'s own policy: its slow start ends, and it is `confirmed`. */
function confirm(states: KeyStates, key: string): void {
  endSlowStart(states, key);
  const state = states.stateOf(key);
  if (state instanceof WithLearned) state.confirmed = true;
}
