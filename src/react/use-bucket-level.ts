import { useMemo, useSyncExternalStore } from 'react';
import type { KeyInspection } from '../pacer/types.js';
import type { UnitInspection } from '../core/units.js';
import { usePacerSource } from './context.js';
import { levelStoreOf } from './level-store.js';
import { type PacerSource, pacerOf } from './source.js';

/**
 * The live state of one key for a gauge: `level` (permits now, a float), `capacity`, `limit`,
 * `queued`, `blockedUntil`, `nextStartAt`, `learned` (the server's policy it adopted) and, with
 * limits per unit, `units` (each unit's `level`, `capacity`, `limit`, `learned`). It is
 * sampled on animation frames only while the bucket refills, so a gauge animates smoothly and
 * an idle page does no work; every gauge of a key shares one sampling loop.
 *
 * On the server, and while hydrating, it reports a full, idle bucket, so the HTML is the same
 * on both sides.
 *
 * ```tsx
 * const { level, capacity } = useBucketLevel(api, 'https://api.example.com');
 * <meter min={0} max={capacity} value={level} />
 * ```
 *
 * @param source a paced fetch or a pacer; `undefined` for the one of `<PacerProvider>`.
 * @param key the key to watch (a paced fetch keys by origin). @default the pacer's default key
 */
export function useBucketLevel(source: PacerSource | undefined, key?: string): KeyInspection {
  const pacer = pacerOf(usePacerSource(source, 'useBucketLevel', 'source'));
  const store = levelStoreOf(pacer, key);
  const getServerSnapshot = useMemo(() => {
    let resting: KeyInspection | undefined;
    return () => {
      if (resting === undefined) {
        const { capacity, limit, units } = pacer.inspect(key);
        resting = Object.freeze({
          at: 0,
          level: capacity,
          capacity,
          limit,
          queued: 0,
          blockedUntil: undefined,
          ...(units === undefined ? {} : { units: restingUnits(units) }),
        });
      }
      return resting;
    };
  }, [pacer, key]);
  return useSyncExternalStore(store.subscribe, store.getSnapshot, getServerSnapshot);
}

/** Each unit full and idle, as the server renders it. */
function restingUnits(
  units: NonNullable<KeyInspection['units']>,
): NonNullable<KeyInspection['units']> {
  const resting: Record<string, UnitInspection> = {};
  for (const name of Object.keys(units)) {
    const unit = units[name];
    if (unit !== undefined) {
      const { capacity, limit, ratePerMs } = unit;
      resting[name] = { level: capacity, capacity, limit, ratePerMs };
    }
  }
  return Object.freeze(resting);
}
