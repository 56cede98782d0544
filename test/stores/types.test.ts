import type { createClient } from 'redis';
import { describe, expectTypeOf, it } from 'vitest';
import type { Decision } from '../../src/core/decision.js';
import type { PacedFetchOptions } from '../../src/http/index.js';
import {
  defineStore,
  type PacerOptions,
  type Store,
  type StoreCall,
  type StoreEvent,
} from '../../src/pacer/index.js';
import type { CrossTabStore } from '../../src/stores/cross-tab/index.js';
import type {
  RedisClientLike,
  RedisScripting,
  RedisStore,
  StoreUnavailableError,
} from '../../src/stores/redis/index.js';

describe('the public types of stores', () => {
  it('takes a node-redis client as it is, and an adapter for any other', () => {
    expectTypeOf<ReturnType<typeof createClient>>().toExtend<RedisClientLike>();
    expectTypeOf<RedisScripting>().toExtend<RedisClientLike>();
    expectTypeOf<{
      eval: (script: string, keys: string[], args: string[]) => Promise<unknown>;
    }>().toExtend<RedisScripting>();
  });

  it('makes stores a pacer and a paced fetch accept', () => {
    expectTypeOf<CrossTabStore>().toExtend<Store>();
    expectTypeOf<RedisStore>().toExtend<Store>();
    expectTypeOf<PacerOptions['store']>().toEqualTypeOf<Store | undefined>();
    expectTypeOf<PacedFetchOptions['store']>().toEqualTypeOf<Store | undefined>();
    expectTypeOf(defineStore<Store>).returns.toEqualTypeOf<Store>();
  });

  it('answers with Promises from the shared stores, and relative times', () => {
    expectTypeOf<CrossTabStore['take']>().returns.toEqualTypeOf<Promise<Decision>>();
    expectTypeOf<RedisStore['takeMany']>().returns.toEqualTypeOf<Promise<readonly Decision[]>>();
    expectTypeOf<StoreCall['signal']>().toEqualTypeOf<AbortSignal>();
    expectTypeOf<StoreEvent['blockedMs']>().toEqualTypeOf<number | undefined>();
    expectTypeOf<StoreUnavailableError['name']>().toEqualTypeOf<'StoreUnavailableError'>();
  });
});
