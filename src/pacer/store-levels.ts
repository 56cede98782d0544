import { IncrementalSweep } from '../core/sweep.js';
import type { PolicySummary } from '../core/compile.js';

interface LastCount {
  /** Whole permits the store said were left. */
  readonly remaining: number;
  /** Pacer time it said so. */
  readonly at: number;
  /** When that credit is full again at the key's own rate (pacer time): the entry is useless then. */
  readonly fullAt: number;
}

/**
 * What a shared store last said of each key's credit, refilled at the key's own rate since: the
 * `level` of `inspect(key)` with a store, which cannot be asked synchronously. Takes by other
 * tabs or processes since then are not in it: it is a gauge, never a decision.
 */
export class StoreLevels {
  private readonly counts = new Map<string, LastCount>();
  /** Drops what is useless (full again) as new keys arrive, without a timer or a scan. */
  private readonly sweep = new IncrementalSweep(
    this.counts,
    (count: LastCount, now) => now >= count.fullAt,
  );

  record(key: string, remaining: number, at: number, info: PolicySummary): void {
    const fullAt = at + Math.max(0, info.capacity - remaining) / info.ratePerMs;
    if (!this.counts.has(key)) this.sweep.step(at);
    this.counts.set(key, { remaining, at, fullAt });
  }

  /** Permits of `key` at `now` as far as this pacer knows; a key never heard of is full. */
  level(key: string, now: number, info: PolicySummary): number {
    const count = this.counts.get(key);
    if (count === undefined) return info.capacity;
    const level = count.remaining + Math.max(0, now - count.at) * info.ratePerMs;
    return level < info.capacity ? level : info.capacity;
  }
}
