import { describe } from '../../core/validate.js';

/**
 * The one thing the store needs of a Redis client: run a Lua script. Implement it for any client
 * (ioredis, a cluster client, Upstash...); `evalSha` is optional and saves sending the script on
 * every call. Both resolve with the script's reply and reject with the client's error.
 *
 * ```ts
 * // ioredis
 * const client = {
 *   eval: (script, keys, args) => redis.eval(script, keys.length, ...keys, ...args),
 *   evalSha: (sha1, keys, args) => redis.evalsha(sha1, keys.length, ...keys, ...args),
 * };
 * ```
 */
export interface RedisScripting {
  eval(script: string, keys: string[], args: string[]): Promise<unknown>;
  evalSha?(sha1: string, keys: string[], args: string[]): Promise<unknown>;
}

/** A node-redis client (`redis` v4 and later), as far as the store uses it. */
export interface NodeRedisClient {
  readonly isOpen: boolean;
  eval(script: string, options: { keys: string[]; arguments: string[] }): Promise<unknown>;
  evalSha(sha1: string, options: { keys: string[]; arguments: string[] }): Promise<unknown>;
}

/** A node-redis client, or any client behind the three-line `RedisScripting` adapter. */
export type RedisClientLike = NodeRedisClient | RedisScripting;

/** Runs the script: EVALSHA first, EVAL when the server does not know it (NOSCRIPT). */
export interface ScriptRunner {
  run(keys: string[], args: string[]): Promise<unknown>;
}

export function scriptRunner(client: RedisClientLike, script: string): ScriptRunner {
  const scripting = adapt(client);
  let sha: Promise<string | undefined> | undefined;
  return {
    async run(keys, args) {
      const { evalSha } = scripting;
      if (evalSha !== undefined) {
        sha ??= sha1(script);
        const digest = await sha;
        if (digest !== undefined) {
          try {
            return await evalSha.call(scripting, digest, keys, args);
          } catch (error) {
            // A restarted or flushed server forgot it: EVAL sends it again and caches it.
            if (!String((error as Error | undefined)?.message).startsWith('NOSCRIPT')) throw error;
          }
        }
      }
      return scripting.eval(script, keys, args);
    },
  };
}

function adapt(client: RedisClientLike): RedisScripting {
  if (typeof client !== 'object' || client === null) {
    throw new TypeError(
      `[fetch-pacer] Expected \`client\` to be a node-redis client or \`{ eval(script, keys, args) }\`, got ${describe(client)}`,
    );
  }
  const found = client as Partial<NodeRedisClient> & Record<string, unknown>;
  if (
    'isOpen' in found &&
    typeof found.evalSha === 'function' &&
    typeof found.eval === 'function'
  ) {
    const redis = client as NodeRedisClient;
    return {
      eval: (script, keys, args) => redis.eval(script, { keys, arguments: args }),
      evalSha: (digest, keys, args) => redis.evalSha(digest, { keys, arguments: args }),
    };
  }
  if (typeof found['evalsha'] === 'function' && typeof found['status'] === 'string') {
    throw new TypeError(
      '[fetch-pacer] This looks like an ioredis client, whose eval takes the number of keys first. Pass an adapter: `{ eval: (script, keys, args) => redis.eval(script, keys.length, ...keys, ...args) }` (see the README).',
    );
  }
  if (typeof found.eval === 'function') return client as RedisScripting;
  throw new TypeError(
    '[fetch-pacer] Expected `client` to be a node-redis client or `{ eval(script, keys, args) }`',
  );
}

/** The script's SHA-1 (hex), for EVALSHA; undefined where Web Crypto is missing (EVAL then). */
async function sha1(text: string): Promise<string | undefined> {
  const subtle = globalThis.crypto?.subtle;
  if (subtle === undefined) return undefined;
  const digest = await subtle.digest('SHA-1', new TextEncoder().encode(text));
  return Array.from(new Uint8Array(digest), (byte) => byte.toString(16).padStart(2, '0')).join('');
}
