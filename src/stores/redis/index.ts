export type { NodeRedisClient, RedisClientLike, RedisScripting } from './client.js';
export { isStoreUnavailableError, StoreUnavailableError } from './health.js';
export {
  type RedisErrorPolicy,
  type RedisStore,
  type RedisStoreOptions,
  redisStore,
} from './store.js';
