import type { PolicySummary } from '../core/limiter.js';

interface Heard {
  /** Whole permits the store said were left. */
  readonly remaining: number;
  /** Pacer time it said so. */
  readonly at: number;
  /** When that credit is full again at the key's own rate (pacer time): the entry is useless then. */
  readonly fullAt: number;
}

/** Entries looked at per new key, so forgotten keys are dropped without a timer or a scan. */
const SWEEP_STEP = 2;

/**
 * What a shared store last said of each key's credit, refilled at the key's own rate since: the
 * `level` of `inspect(key)` with a store, which cannot be asked synchronously. Takes by other
 * tabs or processes since then are not in it: it is a gauge, never a decision.
 */
export class Echoes {
  private readonly heard = new Map<string, Heard>();
  private cursor: MapIterator<[string, Heard]> | undefined;

  record(key: string, remaining: number, at: number, info: PolicySummary): void {
    const fullAt = at + Math.max(0, info.capacity - remaining) / info.ratePerMs;
    if (!this.heard.has(key)) this.sweep(at);
    this.heard.set(key, { remaining, at, fullAt });
  }

  /** Permits of `key` at `now` as far as this pacer knows; a key never heard of is full. */
  level(key: string, now: number, info: PolicySummary): number {
    const heard = this.heard.get(key);
    if (heard === undefined) return info.capacity;
    const level = heard.remaining + Math.max(0, now - heard.at) * info.ratePerMs;
    return level < info.capacity ? level : info.capacity;
  }

  private sweep(now: number): void {
    for (let step = 0; step < SWEEP_STEP; step++) {
      this.cursor ??= this.heard.entries();
      const next = this.cursor.next();
      if (next.done) {
        this.cursor = undefined;
        return;
      }
      const [key, heard] = next.value;
      if (now >= heard.fullAt) this.heard.delete(key);
    }
  }
}
