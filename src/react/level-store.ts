import type { KeyInspection, Pacer } from '../pacer/types.js';

/**
 * One key's live inspection, as a store for `useSyncExternalStore`. While someone listens and
 * the bucket is refilling, it samples `pacer.inspect(key)` once per animation frame and tells
 * the listeners when the inspection changed. A full bucket changes only through the pacer (a
 * task admitted, a server block or its end), which notifies: so it stops sampling when the
 * bucket is full and wakes on the pacer's next change. Idle gauges cost nothing.
 */
export class LevelStore {
  private current: KeyInspection | undefined;
  private readonly listeners = new Set<() => void>();
  private unsubscribe: (() => void) | undefined;
  private frame: { readonly cancel: () => void } | undefined;

  constructor(
    private readonly pacer: Pacer,
    private readonly key: string | undefined,
  ) {}

  readonly subscribe = (listener: () => void): (() => void) => {
    const entry = () => listener();
    this.listeners.add(entry);
    if (this.listeners.size === 1) {
      this.unsubscribe = this.pacer.subscribe(this.wake);
      // Unwatched, the cached value went stale: catch up now rather than a frame late.
      this.sample();
    }
    return () => {
      this.listeners.delete(entry);
      if (this.listeners.size > 0) return;
      this.unsubscribe?.();
      this.unsubscribe = undefined;
      this.frame?.cancel();
      this.frame = undefined;
    };
  };

  /** The inspection last sampled: the same object until a sample differs. */
  readonly getSnapshot = (): KeyInspection => {
    this.current ??= this.pacer.inspect(this.key);
    return this.current;
  };

  /** The pacer changed (or we just subscribed): sample on the next frame. */
  private readonly wake = (): void => {
    if (this.frame === undefined && this.listeners.size > 0) this.frame = nextFrame(this.tick);
  };

  private readonly tick = (): void => {
    this.frame = undefined;
    this.sample();
  };

  private sample(): void {
    const next = this.pacer.inspect(this.key);
    if (this.current === undefined || differs(this.current, next)) {
      this.current = next;
      for (const listener of [...this.listeners]) listener();
    }
    if (next.level < next.capacity || refilling(next.units)) this.wake();
  }
}

/**
 * Equal for a gauge: `at` moves on every sample and is not part of what is drawn. A learned
 * rate (AIMD) is a new object on every inspection, so `learned` is compared by its fields.
 */
function differs(a: KeyInspection, b: KeyInspection): boolean {
  return (
    a.level !== b.level ||
    a.capacity !== b.capacity ||
    a.limit !== b.limit ||
    a.queued !== b.queued ||
    a.blockedUntil !== b.blockedUntil ||
    a.nextStartAt !== b.nextStartAt ||
    a.learned?.limit !== b.learned?.limit ||
    a.learned?.windowMs !== b.learned?.windowMs ||
    a.learned?.source !== b.learned?.source ||
    unitsDiffer(a.units, b.units)
  );
}

type Units = KeyInspection['units'];

/** Whether a unit (tokens) is below its capacity: the gauge of that unit still moves. */
function refilling(units: Units): boolean {
  if (units === undefined) return false;
  for (const name of Object.keys(units)) {
    const unit = units[name];
    if (unit !== undefined && unit.level < unit.capacity) return true;
  }
  return false;
}

/** The units of two inspections differ where a gauge per unit would draw them differently. */
function unitsDiffer(a: Units, b: Units): boolean {
  if (a === undefined || b === undefined) return a !== b;
  for (const name of Object.keys(b)) {
    const x = a[name];
    const y = b[name];
    if (
      x === undefined ||
      y === undefined ||
      x.level !== y.level ||
      x.capacity !== y.capacity ||
      x.limit !== y.limit ||
      x.learned?.limit !== y.learned?.limit ||
      x.learned?.windowMs !== y.learned?.windowMs
    ) {
      return true;
    }
  }
  return false;
}

/** `requestAnimationFrame` where there is one (looked up per call), else a ~60 Hz timeout. */
function nextFrame(callback: () => void): { readonly cancel: () => void } {
  const raf = globalThis.requestAnimationFrame;
  if (typeof raf === 'function') {
    const handle = raf(() => callback());
    return { cancel: () => globalThis.cancelAnimationFrame(handle) };
  }
  const handle = globalThis.setTimeout(callback, 16);
  return { cancel: () => globalThis.clearTimeout(handle) };
}

const stores = new WeakMap<Pacer, Map<string | undefined, LevelStore>>();

/** One store per pacer and key, shared by every gauge of that key: one sampling loop. */
export function levelStoreOf(pacer: Pacer, key: string | undefined): LevelStore {
  let byKey = stores.get(pacer);
  if (byKey === undefined) {
    byKey = new Map();
    stores.set(pacer, byKey);
  }
  let store = byKey.get(key);
  if (store === undefined) {
    store = new LevelStore(pacer, key);
    byKey.set(key, store);
  }
  return store;
}
