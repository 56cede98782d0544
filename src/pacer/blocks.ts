const NONE: readonly string[] = Object.freeze([]);

/**
 * The server blocks of a pacer's keys as last read from the limiter, so the snapshot can list
 * the blocked keys and drop each when it expires. Rarely more than a few entries.
 */
export class ServerBlocks {
  readonly #untils = new Map<string, number>();
  /** No block ends before this (a lower bound; Infinity when there is none). */
  #end = Infinity;
  #list = NONE;

  /** The blocked keys, sorted, frozen; the same array while the set is unchanged. */
  get keys(): readonly string[] {
    return this.#list;
  }

  /** The earliest time a block may end: the pacer wakes then to update its snapshot. */
  get nextEnd(): number {
    return this.#end;
  }

  /** Records what the limiter now says of `key` (undefined: not blocked). */
  set(key: string, until: number | undefined): void {
    if (until === this.#untils.get(key)) return;
    if (until === undefined) this.#untils.delete(key);
    else {
      this.#untils.set(key, until);
      if (until < this.#end) this.#end = until;
    }
    this.#relist();
  }

  /** Forgets the blocks that have ended by `now`. */
  sweep(now: number): void {
    if (now < this.#end) return;
    let end = Infinity;
    const before = this.#untils.size;
    for (const [key, until] of this.#untils) {
      if (now >= until) this.#untils.delete(key);
      else if (until < end) end = until;
    }
    this.#end = end;
    if (this.#untils.size !== before) this.#relist();
  }

  #relist(): void {
    this.#list = this.#untils.size === 0 ? NONE : Object.freeze([...this.#untils.keys()].sort());
  }
}
