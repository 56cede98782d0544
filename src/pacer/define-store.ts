import { describe } from '../core/validate.js';
import type { PermitsFactory } from './permits.js';
import { PERMITS, type Store } from './store-contract.js';
import { StorePermits } from './store-permits.js';

/**
 * Makes `store` one that `createPacer({ store })` accepts, and returns it. This is what brings
 * in the pacer's code for stores (asking a store for the head tasks of each key, awaiting its
 * answers): an app that never imports a store, or this, does not carry it. `crossTabStore` and
 * `redisStore` come defined.
 *
 * ```ts
 * const store = defineStore({ take, peek, block }); // your own Store
 * const pacer = createPacer({ limits: perSecond(10), store });
 * ```
 */
export function defineStore<T extends Store>(store: T): T {
  for (const method of ['take', 'peek', 'block'] as const) {
    if (typeof store?.[method] !== 'function') {
      throw new TypeError(
        `[fetch-pacer] Expected a store to have \`take()\`, \`peek()\` and \`block()\`, got ${describe(store)}`,
      );
    }
  }
  Object.defineProperty(store, PERMITS, { value: storePermits, configurable: true });
  return store;
}

/** The permit source of a pacer with a store: what `defineStore` attaches (see `PERMITS`). */
const storePermits: PermitsFactory = (core, store) => new StorePermits(core, store);
