import type { ResolvedPolicy } from '../core/policy.js';
import { IncrementalSweep } from '../core/sweep.js';

/**
 * A store counts a request when it is sent, and never hears when it arrived; the server counts
 * arrivals, and the network's jitter bunches them: sends spaced one every `windowMs / limit`
 * arrive up to the jitter's spread closer together, so a window of the server can hold one more
 * than the limit (three processes on one store configured to 60 per second, through 5-60 ms each
 * way: a sliding log refused 3-5 of 300 calls, a sliding-window counter and fixed windows 0-1).
 * A policy without a burst (`capacity` 1: the spaced default of a paced fetch with a store) is
 * told to the store over a window half a round trip longer, as the stores space a policy the
 * server advertised (`SharedLearned` in stores/bucket-state.ts): a one-way delay is at most the
 * round trip less the other way's, so no `limit` arrivals come closer than a window. A policy
 * with a burst says the server takes bursts, and jitter is within them.
 *
 * The round trip is the longest of the key's recent answers (`RoundTrips`), at most the window.
 * The spread windows are kept per whole ms of the half round trip, so a store that caches what it
 * derives from a call's `limits` (a script's arguments) finds the same array again while the
 * round trip stays.
 */
export function spreadFor(
  limits: readonly ResolvedPolicy[],
  roundTripMs: number,
): readonly ResolvedPolicy[] {
  const halfMs = Math.ceil(roundTripMs / 2);
  if (!(halfMs > 0) || !limits.some(isSpaced)) return limits;
  // The last spread of each policy: a key's round trip changes only when a longer one comes or
  // the older half of its answers goes.
  const last = spreads.get(limits);
  if (last?.halfMs === halfMs) return last.spread;
  const spread = Object.freeze(limits.map((policy) => spreadPolicy(policy, halfMs)));
  spreads.set(limits, { halfMs, spread });
  return spread;
}

const spreads = new WeakMap<
  readonly ResolvedPolicy[],
  { readonly halfMs: number; readonly spread: readonly ResolvedPolicy[] }
>();

function isSpaced(policy: ResolvedPolicy): boolean {
  return policy.capacity === 1;
}

function spreadPolicy(policy: ResolvedPolicy, halfMs: number): ResolvedPolicy {
  if (!isSpaced(policy)) return policy;
  const { windowMs } = policy;
  return Object.freeze({ ...policy, windowMs: windowMs + Math.min(halfMs, windowMs / 2) });
}

/** Answers in each half of what `RoundTrips` remembers: the older half goes when one fills. */
const HALF_ANSWERS = 8;

interface Heard {
  /** The longest round trip of the older half of the recent answers. */
  older: number;
  /** The longest of the newer half, and how many answers it holds. */
  newer: number;
  count: number;
  /** Pacer time after which the key's answers are too old to say anything (see `heard`). */
  until: number;
}

/**
 * The longest round trip of each key's recent answers: of the last 8 to 16, so a slower network
 * counts at once and a faster one after 16 answers. Counted in answers, not time: a policy of 10
 * a minute hears one every 6 s, and its round trip must hold for the minute.
 */
export class RoundTrips {
  private readonly keys = new Map<string, Heard>();
  /** Drops a key's entry once it is too old, as new keys arrive, without a timer or a scan. */
  private readonly sweep = new IncrementalSweep(
    this.keys,
    (entry: Heard, now) => now > entry.until,
  );

  /**
   * An answer of `key` came `ms` after its request was sent, at `now`; it says something of the
   * key's next requests for `keepMs` (two of its longest windows: a key at rest that long
   * starts a fresh window at the server).
   */
  heard(key: string, ms: number, now: number, keepMs: number): void {
    if (!(ms > 0) || !Number.isFinite(ms)) return;
    let entry = this.keys.get(key);
    if (entry === undefined || now > entry.until) {
      if (entry === undefined) this.sweep.step(now);
      entry = { older: 0, newer: 0, count: 0, until: 0 };
      this.keys.set(key, entry);
    }
    if (ms > entry.newer) entry.newer = ms;
    if (++entry.count >= HALF_ANSWERS) {
      entry.older = entry.newer;
      entry.newer = 0;
      entry.count = 0;
    }
    entry.until = now + keepMs;
  }

  /** The longest round trip of `key`'s recent answers at `now` (ms; 0 when none). */
  of(key: string, now: number): number {
    const entry = this.keys.get(key);
    if (entry === undefined || now > entry.until) return 0;
    return entry.older > entry.newer ? entry.older : entry.newer;
  }
}
