import { IncrementalSweep } from '../core/sweep.js';

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
 * a minute hears one every 6 s, and its round trip must hold for the minute. A pacer tells its
 * store with each ask (`StoreCall.roundTripMs`): the server counts arrivals, which the network's
 * jitter bunches, and the store spreads the key's spaced policies by it (`spreadAt` in
 * stores/bucket-state.ts).
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
