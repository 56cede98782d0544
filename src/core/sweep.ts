/** Entries looked at per call: more than one per new entry, so a lap outpaces additions. */
const STEP = 2;

/**
 * The incremental sweep of a map that grows by one entry at a time: each addition pays for
 * looking at `STEP` entries where the last look stopped, so the cursor laps the map faster than
 * entries are added and every dead entry is found within a lap, with no timer and no full scan.
 * (A Map iterator stays valid while entries are deleted and added.)
 */
export class IncrementalSweep<K, V> {
  #cursor: MapIterator<[K, V]> | undefined;

  constructor(
    private readonly map: Map<K, V>,
    /** Whether an entry can go (at rest, expired). */
    private readonly isDead: (value: V, now: number) => boolean,
  ) {}

  /** Looks at the next few entries and drops the dead ones. */
  step(now: number): void {
    for (let step = 0; step < STEP; step++) {
      this.#cursor ??= this.map.entries();
      const next = this.#cursor.next();
      if (next.done) {
        this.#cursor = undefined;
        return;
      }
      const [key, value] = next.value;
      if (this.isDead(value, now)) this.map.delete(key);
    }
  }

  /** Starts the next look from the beginning (after the map was cleared or fully swept). */
  restart(): void {
    this.#cursor = undefined;
  }
}
