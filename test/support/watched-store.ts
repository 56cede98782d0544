import type { createClient } from 'redis';
import type { Decision } from '../../src/core/decision.js';
import { defineStore, type Store, type StoreCost } from '../../src/pacer/index.js';
import type { RedisScripting } from '../../src/stores/redis/index.js';

/** A store as the pacer's model test sees it: what it granted, and how the pacer called it. */
export interface WatchedStore {
  /** The store to give the pacer: every call passes through to the one watched. */
  readonly store: Store;
  /** Permits of `key` granted so far (the costs of the allowed decisions, in the main unit). */
  granted(key: string): number;
  /** `take`/`takeMany` calls made for a key while another for that key was still out. */
  readonly overlaps: number;
  /** Calls of any kind whose Promise has not settled yet. */
  readonly outstanding: number;
}

const amountOf = (cost: StoreCost) => (typeof cost === 'number' ? cost : (cost[0] ?? 0));

const isPromise = <T>(value: T | Promise<T>): value is Promise<T> =>
  typeof (value as { then?: unknown } | null)?.then === 'function';

/**
 * Wraps `inner` (any store: the fake, cross-tab, Redis) so that every kind is checked the same
 * way: each grant is counted when the answer reaches the pacer (before the pacer sees it), two
 * takes of one key out at once count as an overlap, and calls still out are counted so that a
 * test can wait for a store's own asynchronous work (IndexedDB, a Redis round trip) to end.
 * Synchronous answers stay synchronous.
 */
export function watchStore(inner: Store): WatchedStore {
  const granted = new Map<string, number>();
  const takesOut = new Map<string, number>();
  let overlaps = 0;
  let outstanding = 0;

  /** Calls `ask`; `done` runs once it answered or failed, `answered` with the answer. */
  function watch<T>(ask: () => T | Promise<T>, done: () => void, answered: (value: T) => void) {
    let answer: T | Promise<T>;
    try {
      answer = ask();
    } catch (error) {
      done();
      throw error;
    }
    if (!isPromise(answer)) {
      done();
      answered(answer);
      return answer;
    }
    outstanding++;
    return answer.then(
      (value) => {
        outstanding--;
        done();
        answered(value);
        return value;
      },
      (error: unknown) => {
        outstanding--;
        done();
        throw error;
      },
    );
  }

  function taking<T>(
    key: string,
    costs: readonly StoreCost[],
    ask: () => T | Promise<T>,
    decisionsOf: (value: T) => readonly Decision[],
  ) {
    const out = takesOut.get(key) ?? 0;
    if (out > 0) overlaps++;
    takesOut.set(key, out + 1);
    return watch(
      ask,
      () => takesOut.set(key, (takesOut.get(key) ?? 1) - 1),
      (value) => {
        decisionsOf(value).forEach((decision, index) => {
          if (!decision.allowed) return;
          const cost = amountOf(costs[index] as StoreCost);
          granted.set(key, (granted.get(key) ?? 0) + cost);
        });
      },
    );
  }

  const nothing = () => {};
  const store: Store = {
    synchronous: inner.synchronous === true,
    check: (limits) => inner.check?.(limits),
    take: (key, cost, call) =>
      taking(
        key,
        [cost],
        () => inner.take(key, cost, call),
        (decision) => [decision],
      ),
    peek: (key, cost, call) => watch(() => inner.peek(key, cost, call), nothing, nothing),
    block: (key, ms, call) => watch(() => inner.block(key, ms, call), nothing, nothing),
  };
  // The optional methods only where the store has them: the pacer asks whether they exist.
  const { observe, adjust, subscribe } = inner;
  if (observe !== undefined) {
    store.observe = (key, signal, call) =>
      watch(() => observe.call(inner, key, signal, call), nothing, nothing);
  }
  if (adjust !== undefined) {
    store.adjust = (key, amounts, call, reservedAt) =>
      watch(() => adjust.call(inner, key, amounts, call, reservedAt), nothing, nothing);
  }
  if (subscribe !== undefined) store.subscribe = subscribe.bind(inner);
  const { takeMany } = inner;
  if (takeMany !== undefined) {
    store.takeMany = (key, costs, stopAtDenial, call) =>
      taking(
        key,
        costs,
        () => takeMany.call(inner, key, costs, stopAtDenial, call),
        (decisions) => decisions,
      );
  }

  return {
    store: defineStore(store),
    granted: (key) => granted.get(key) ?? 0,
    get overlaps() {
      return overlaps;
    },
    get outstanding() {
      return outstanding;
    },
  };
}

/**
 * The store's script run on the test's clock, through the `RedisScripting` adapter: the time
 * argument (ARGV[2], '' for the server's) set to `now()`, as redis.test.ts runs it. The script
 * sets its TTL from that clock, but Redis expires keys on its own: PERSIST in the same
 * transaction keeps the key until the test's time says it is at rest (the test deletes its
 * keys at the end).
 */
export function scriptsAt(client: ReturnType<typeof createClient>, now: () => number) {
  const scripting: RedisScripting = {
    async eval(script, keys, args) {
      const [op = '', , ...rest] = args;
      const [reply] = await client
        .multi()
        .eval(script, { keys, arguments: [op, String(now()), ...rest] })
        .persist(keys[0] as string)
        .exec();
      return reply;
    },
  };
  return scripting;
}
