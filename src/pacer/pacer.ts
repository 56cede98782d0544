import { type PacerOptions, resolvePacerOptions } from './options.js';
import { Scheduler } from './scheduler.js';
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
  const scheduler = new Scheduler(resolvePacerOptions(options));
  // Methods bound once, so `pacer.subscribe` and friends can be passed around.
  return Object.freeze<Pacer>({
    schedule: (task, scheduleOptions) => scheduler.schedule(task, scheduleOptions),
    acquire: (acquireOptions) => scheduler.schedule(noop, acquireOptions),
    tryAcquire: (key, cost) => scheduler.tryAcquire(key, cost),
    now: () => scheduler.now(),
    blockUntil: (key, until) => scheduler.blockUntil(key, until),
    observe: (key, quota) => scheduler.observe(key, quota),
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
