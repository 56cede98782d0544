import { describe } from '../core/validate.js';
import { type PacerOptions, resolvePacerOptions } from './options.js';
import type { PermitsFactory } from './permits.js';
import { Scheduler } from './scheduler.js';
import { PERMITS, type Store } from './store-contract.js';
import type { Pacer } from './types.js';

/**
 * A pacer: runs tasks per key against its own rate limiter, queueing them (or rejecting them)
 * so that none starts before its permits exist and none later than it must.
 *
 * ```ts
 * const pacer = createPacer({ limits: perSecond(5) });
 * const user = await pacer.schedule(() => fetch('/api/user').then((r) => r.json()));
 * ```
 */
export function createPacer(options: PacerOptions): Pacer {
  const resolved = resolvePacerOptions(options);
  const { store } = resolved;
  // The code for stores comes with the store (`defineStore`): bundles without one stay lean.
  const fromStore = store === undefined ? undefined : permitsOf(store);
  const scheduler = new Scheduler(
    resolved,
    fromStore && store !== undefined ? (core) => fromStore(core, store) : undefined,
  );
  // Methods bound once, so `pacer.subscribe` and friends can be passed around.
  return Object.freeze<Pacer>({
    schedule: (task, scheduleOptions) => scheduler.schedule(task, scheduleOptions),
    acquire: (acquireOptions) => scheduler.schedule(noop, acquireOptions),
    tryAcquire: (key, cost) => scheduler.tryAcquire(key, cost),
    now: () => scheduler.now(),
    blockUntil: (key, until) => scheduler.blockUntil(key, until),
    observe: (key, quota) => scheduler.observe(key, quota),
    adjust: (key, delta, reserved) => scheduler.adjust(key, delta, reserved),
    pause: () => scheduler.pause(),
    resume: () => scheduler.resume(),
    onIdle: () => scheduler.onIdle(),
    dispose: () => scheduler.dispose(),
    subscribe: (listener) => scheduler.subscribe(listener),
    getSnapshot: () => scheduler.getSnapshot(),
    inspect: (key) => scheduler.inspect(key),
  });
}

function noop(): void {}

/** The permit source `defineStore` attached to `store` (crossTabStore and redisStore have it). */
function permitsOf(store: Store): PermitsFactory {
  const shared = (store as { [PERMITS]?: PermitsFactory } | null)?.[PERMITS];
  if (typeof shared !== 'function') {
    throw new TypeError(
      `[fetch-pacer] Expected \`store\` to be made by crossTabStore(), redisStore() or defineStore(), got ${describe(store)}`,
    );
  }
  return shared;
}
