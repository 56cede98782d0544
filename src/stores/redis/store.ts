import type { Decision } from '../../core/decision.js';
import type { ResolvedPolicy } from '../../core/policy.js';
import type { ServerSignal } from '../../core/signal.js';
import { assertKnownOptions, assertPositiveFinite, describe } from '../../core/validate.js';
import { defineStore } from '../../pacer/define-store.js';
import type { StoreCall, StoreCost } from '../../pacer/store-contract.js';
import { LocalLimits } from '../local.js';
import { assertShareable, effectOn } from '../bucket-state.js';
import type { RemoteStore } from '../remote-store.js';
import { type RedisClientLike, scriptRunner } from './client.js';
import { Health, isOutage, isStoreUnavailableError } from './health.js';
import { encodeCost, type Operation, parseDecisions, SCRIPT, scriptArgs } from './script.js';

/** What the store does while Redis does not answer. */
export type RedisErrorPolicy = 'fail-closed' | 'fail-open';

export interface RedisStoreOptions {
  /** A connected node-redis client (v4 and later), or a `RedisScripting` adapter (ioredis...). */
  readonly client: RedisClientLike;
  /**
   * Put before every key in Redis, so one server can hold several budgets (and other data).
   * @default 'fetch-pacer:'
   */
  readonly prefix?: string;
  /**
   * While Redis does not answer:
   * - `'fail-closed'`: tasks wait (the pacer keeps them queued, FIFO) while the store retries
   *   with backoff; none starts without Redis, so the fleet never exceeds the limit. After
   *   `maxOutageMs` of outage they reject with `StoreUnavailableError`, at once, until Redis
   *   answers again. Abort and dispose work throughout.
   * - `'fail-open'`: each process paces alone, with an in-memory limiter of the same policy,
   *   and goes back to Redis when it answers. Nothing waits on Redis; N processes may together
   *   send up to N times the limit meanwhile.
   * @default 'fail-closed'
   */
  readonly onError?: RedisErrorPolicy;
  /** Longest wait for one Redis call in ms; a slower answer counts as an outage. @default 2_000 */
  readonly timeoutMs?: number;
  /**
   * `'fail-closed'`: how long tasks wait through an outage, in ms, before they reject.
   * @default 30_000
   */
  readonly maxOutageMs?: number;
}

/** A store shared through Redis by every process using the same server and prefix. */
export interface RedisStore extends RemoteStore {
  readonly prefix: string;
  /** Forgets `key` on the server: its bucket starts full and unblocked for every process. */
  reset(key: string): Promise<void>;
}

/**
 * One bucket per key for every Node process that shares the Redis server: each decision is one
 * Lua script run by the server alone, on the server's clock. See the README for ioredis.
 *
 * ```ts
 * const client = await createClient({ url: process.env.REDIS_URL }).connect();
 * const pacer = createPacer({ limits: perSecond(10), store: redisStore({ client }) });
 * ```
 */
export function redisStore(options: RedisStoreOptions): RedisStore {
  if (typeof options !== 'object' || options === null) {
    throw new TypeError(
      `[fetch-pacer] Expected redisStore options \`{ client }\`, got ${describe(options)}`,
    );
  }
  assertKnownOptions('redisStore()', options, [
    'client',
    'prefix',
    'onError',
    'timeoutMs',
    'maxOutageMs',
  ]);
  const {
    client,
    prefix = 'fetch-pacer:',
    onError = 'fail-closed',
    timeoutMs = 2_000,
    maxOutageMs = 30_000,
  } = options;
  if (typeof prefix !== 'string') {
    throw new TypeError(
      `[fetch-pacer] Expected \`prefix\` to be a string, got ${describe(prefix)}`,
    );
  }
  if (onError !== 'fail-closed' && onError !== 'fail-open') {
    throw new TypeError(
      `[fetch-pacer] Expected \`onError\` to be 'fail-closed' or 'fail-open', got ${describe(onError)}`,
    );
  }
  assertPositiveFinite('timeoutMs', timeoutMs);
  if (maxOutageMs !== Number.POSITIVE_INFINITY) assertPositiveFinite('maxOutageMs', maxOutageMs);
  return defineStore(
    new RedisBuckets(client, prefix, onError === 'fail-open', timeoutMs, maxOutageMs),
  );
}

class RedisBuckets implements RedisStore {
  readonly synchronous = false;
  /** One rate per key from its clients' bare refusals, paced for all (`SharedRate`). */
  readonly pacesRefusals = true;
  private readonly runner;
  private readonly health: Health;
  private readonly local: LocalLimits | undefined;

  constructor(
    client: RedisClientLike,
    readonly prefix: string,
    failOpen: boolean,
    timeoutMs: number,
    maxOutageMs: number,
  ) {
    this.runner = scriptRunner(client, SCRIPT);
    this.health = new Health(timeoutMs, maxOutageMs, () =>
      this.runner.run([prefix], scriptArgs('n', [], [])),
    );
    this.local = failOpen ? new LocalLimits() : undefined;
  }

  check(limits: readonly ResolvedPolicy[]): void {
    assertShareable(limits, 'redisStore');
  }

  async take(key: string, cost: StoreCost, call: StoreCall): Promise<Decision> {
    const [decision] = await this.takeMany(key, [cost], false, call);
    return decision as Decision;
  }

  takeMany(
    key: string,
    costs: readonly StoreCost[],
    stopAtDenial: boolean,
    call: StoreCall,
  ): Promise<readonly Decision[]> {
    const args = [call.roundTripMs ?? 0, stopAtDenial ? 1 : 0, ...costs.map(encodeCost)];
    return this.call(key, 't', args, call, parseDecisions, (local) =>
      local.takeMany(key, costs, stopAtDenial, call),
    );
  }

  async peek(key: string, cost: StoreCost, call: StoreCall): Promise<Decision> {
    const [decision] = await this.call(
      key,
      'p',
      [call.roundTripMs ?? 0, encodeCost(cost)],
      call,
      parseDecisions,
      (local) => [local.peek(key, cost, call)],
    );
    return decision as Decision;
  }

  /** Best effort: one attempt. The pacer keeps its own copy of the block either way. */
  async block(key: string, ms: number, call: StoreCall): Promise<void> {
    this.local?.block(key, ms);
    await this.once(key, 'b', [ms], call);
  }

  /**
   * The signal as the script takes it (`effectOn`): a policy to learn, a count to lower the
   * policies of its unit to, a block.
   */
  async observe(key: string, signal: ServerSignal, call: StoreCall): Promise<void> {
    this.local?.observe(key, signal, call);
    const effect = effectOn(signal, call.limits.length, call.units, call.roundTripMs);
    if (effect === undefined) return;
    const { remaining, blockMs, learns, which } = effect;
    if (signal.kind === 'answered') {
      // The longest round trip its client holds: it spreads the key's spaced policies.
      await this.once(key, 'k', [effect.roundTripMs ?? 0], call);
      return;
    }
    const some = which.length < call.limits.length ? which.map((index) => index + 1) : [];
    if (effect.refused === true) {
      // Bare, the key is lowered to nothing; with a wait, blocked for it. Either way its shared
      // rate is made or cut in the same step.
      const sentAt = Math.min(0, (signal as { readonly sentAt?: number }).sentAt ?? 0);
      await (blockMs > 0
        ? this.once(key, 'w', [sentAt, blockMs], call)
        : this.once(key, 'f', [sentAt, ...some], call));
      return;
    }
    // The round trip spaces the learned policy of the signal's unit (`heardRoundTrip`).
    const roundTripMs = effect.roundTripMs ?? 0;
    if (learns !== undefined) {
      const { limit, windowMs, of, inferred } = learns;
      await this.once(key, 'a', [limit, windowMs, of, roundTripMs, inferred ? 1 : 0], call);
    }
    // A count of 0: no block where the key's own count agrees (`agreesAtZero`), judged before
    // the count lowers it.
    if (blockMs > 0) {
      const args = [blockMs, effect.limit ?? 0, which[0] as number, roundTripMs];
      await this.once(key, 'b', args, call);
    }
    if (remaining !== undefined) {
      // The limit it names, if any (0: none): a count of a learned one steers it.
      await this.once(key, 'l', [remaining, roundTripMs, effect.limit ?? 0, ...some], call);
    }
  }

  /** Best effort, like `block`: one attempt. */
  async adjust(
    key: string,
    amounts: readonly number[],
    call: StoreCall,
    reservedAt?: number,
  ): Promise<void> {
    this.local?.adjust(key, amounts, call, reservedAt);
    const each = call.limits.map((_, index) => amounts[index] ?? 0);
    // The reserve's time last, relative (the script's clock is Redis's).
    await this.once(key, 'd', reservedAt === undefined ? each : [...each, reservedAt], call);
  }

  async reset(key: string): Promise<void> {
    this.local?.reset(key);
    await this.runner.run([this.prefix + key], scriptArgs('r', [], []));
  }

  /**
   * Runs the script for `key`. On an outage: fail-open answers from the local limiter at once;
   * fail-closed waits for Redis (shared probes with backoff), bounded by `maxOutageMs`.
   */
  private async call<T>(
    key: string,
    op: Operation,
    opArgs: readonly (number | string)[],
    call: StoreCall,
    parse: (reply: unknown) => T,
    fallback: (local: LocalLimits) => T,
  ): Promise<T> {
    const { health, local } = this;
    const args = scriptArgs(op, call.limits, opArgs);
    for (;;) {
      if (health.down) {
        if (local !== undefined) {
          health.probeSoon();
          return fallback(local);
        }
        await health.waitUp(call.signal);
      }
      try {
        const sent = this.runner.run([this.prefix + key], args);
        const reply = await health.watch(sent, call.signal, local !== undefined);
        health.up();
        return parse(reply);
      } catch (error) {
        call.signal.throwIfAborted();
        if (isStoreUnavailableError(error) || !isOutage(error)) throw error;
        health.failed(error);
      }
    }
  }

  private async once(key: string, op: Operation, opArgs: readonly number[], call: StoreCall) {
    if (this.health.down) return;
    try {
      const args = scriptArgs(op, call.limits, opArgs);
      await this.health.watch(this.runner.run([this.prefix + key], args), call.signal, true);
      this.health.up();
    } catch (error) {
      if (isOutage(error)) this.health.failed(error);
    }
  }
}
