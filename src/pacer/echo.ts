import { IncrementalSweep } from '../core/sweep.js';
import type { PolicySummary } from '../core/compile.js';

interface Heard {
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
export class Echoes {
  private readonly heard = new Map<string, Heard>();
  /** Drops what is useless (full again) as new keys arrive, without a timer or a scan. */
  private readonly sweep = new IncrementalSweep(
    this.heard,
    (heard: Heard, now) => now >= heard.fullAt,
  );

  record(key: string, remaining: number, at: number, info: PolicySummary): void {
    const fullAt = at + Math.max(0, info.capacity - remaining) / info.ratePerMs;
    if (!this.heard.has(key)) this.sweep.step(at);
    this.heard.set(key, { remaining, at, fullAt });
  }

  /** Permits of `key` at `now` as far as this pacer knows; a key never heard of is full. */
  level(key: string, now: number, info: PolicySummary): number {
    const heard = this.heard.get(key);
    if (heard === undefined) return info.capacity;
    const level = heard.remaining + Math.max(0, now - heard.at) * info.ratePerMs;
    return level < info.capacity ? level : info.capacity;
  }
}
