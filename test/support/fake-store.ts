import type { Decision } from '../../src/core/decision.js';
import type { ResolvedPolicy } from '../../src/core/policy.js';
import type { ServerSignal } from '../../src/core/signal.js';
import {
  defineStore,
  type Store,
  type StoreCall,
  type StoreCost,
  type StoreEvent,
} from '../../src/pacer/index.js';
import {
  adjust,
  amountOf,
  assertShareable,
  type BucketState,
  block,
  decide,
  observe,
  normalize,
  peek,
} from '../../src/stores/bucket-state.js';

/** One call to the fake store, waiting for the test to answer it. */
export interface PendingCall {
  readonly kind: 'take' | 'takeMany' | 'peek';
  readonly key: string;
  readonly costs: readonly StoreCost[];
  readonly stopAtDenial: boolean;
  readonly call: StoreCall;
  /** Decides now (at the clock's time), as the store's atomic step would, and answers. */
  answer(): readonly Decision[];
  /** Answers with an error instead. */
  fail(error: unknown): void;
}

export interface FakeStoreOptions {
  /** The store's clock (ms); its own, as a shared store's is. */
  readonly now: () => number;
  /** Answer by hand (`pending`), or at once on a microtask (`'auto'`). @default 'auto' */
  readonly answer?: 'manual' | 'auto';
  /** Offer `takeMany`. @default true */
  readonly batches?: boolean;
  /** Answer with plain values (a synchronous store). @default false */
  readonly synchronous?: boolean;
  /**
   * Learn one rate per key from bare refusals (`Store.pacesRefusals`), as the stores of this
   * package do; false: each pacer learns its own, as with a store that does not. @default true
   */
  readonly pacesRefusals?: boolean;
}

/**
 * An in-memory shared store with the real shared-bucket arithmetic, whose answers the test
 * controls: it records every call, checks that no two `take` calls for one key overlap, and
 * logs every grant with the store's time.
 */
export function fakeStore(options: FakeStoreOptions) {
  const { now, answer = 'auto', batches = true, synchronous = false } = options;
  const { pacesRefusals = true } = options;
  const states = new Map<string, BucketState>();
  const pending: PendingCall[] = [];
  const takesOut = new Map<string, number>();
  const listeners = new Set<(event: StoreEvent) => void>();
  /** Each grant: its cost in the main unit, its amounts per policy if any, the store's time. */
  const grants: { key: string; cost: number; amounts?: StoreCost; at: number }[] = [];
  const blocks: { key: string; ms: number }[] = [];
  const observed: { key: string; signal: ServerSignal }[] = [];
  const adjusted: { key: string; amounts: number[] }[] = [];
  let overlaps = 0;
  let calls = 0;

  const stateOf = (key: string, limits: readonly ResolvedPolicy[]) => {
    const state = normalize(states.get(key), limits, now());
    states.set(key, state);
    return state;
  };

  function settleTake(key: string, costs: readonly StoreCost[], stop: boolean, call: StoreCall) {
    const at = now();
    const state = stateOf(key, call.limits);
    const decisions = decide(state, call.limits, at, costs, stop, call.roundTripMs);
    decisions.forEach((decision, index) => {
      if (!decision.allowed) return;
      const cost = costs[index] as StoreCost;
      const amounts = typeof cost === 'number' ? {} : { amounts: cost };
      grants.push({ key, cost: amountOf(cost, 0), ...amounts, at });
    });
    return decisions;
  }

  function enqueue(
    kind: PendingCall['kind'],
    key: string,
    costs: readonly StoreCost[],
    stopAtDenial: boolean,
    call: StoreCall,
  ): Promise<readonly Decision[]> {
    calls++;
    const taking = kind !== 'peek';
    if (taking) {
      const out = takesOut.get(key) ?? 0;
      if (out > 0) overlaps++;
      takesOut.set(key, out + 1);
    }
    const done = () => {
      if (taking) takesOut.set(key, (takesOut.get(key) ?? 1) - 1);
    };
    return new Promise((resolve, reject) => {
      const entry: PendingCall = {
        kind,
        key,
        costs,
        stopAtDenial,
        call,
        answer() {
          pending.splice(pending.indexOf(entry), 1);
          done();
          const decisions = taking
            ? settleTake(key, costs, stopAtDenial, call)
            : [
                peek(
                  stateOf(key, call.limits),
                  call.limits,
                  now(),
                  costs[0] as StoreCost,
                  call.roundTripMs,
                ),
              ];
          resolve(decisions);
          return decisions;
        },
        fail(error) {
          pending.splice(pending.indexOf(entry), 1);
          done();
          reject(error);
        },
      };
      pending.push(entry);
      if (answer === 'auto') queueMicrotask(() => entry.answer());
    });
  }

  const store: Store = {
    synchronous,
    pacesRefusals,
    check: (limits) => assertShareable(limits, 'fakeStore'),
    take(key, cost, call) {
      if (synchronous) return settleTake(key, [cost], false, call)[0] as Decision;
      return enqueue('take', key, [cost], false, call).then((d) => d[0] as Decision);
    },
    peek(key, cost, call) {
      if (synchronous) {
        return peek(stateOf(key, call.limits), call.limits, now(), cost, call.roundTripMs);
      }
      return enqueue('peek', key, [cost], false, call).then((d) => d[0] as Decision);
    },
    block(key, ms, call) {
      blocks.push({ key, ms });
      block(stateOf(key, call.limits), now() + ms);
    },
    observe(key, signal, call) {
      observed.push({ key, signal });
      // A store that learns no rate takes a bare refusal as a count of nothing left.
      const bare = signal.kind === 'refusal' && signal.retryAfterMs === undefined;
      const taken: ServerSignal = bare && !pacesRefusals ? { kind: 'quota', remaining: 0 } : signal;
      const { limits, units, roundTripMs } = call;
      observe(stateOf(key, limits), limits, now(), taken, units, roundTripMs);
    },
    adjust(key, amounts, call, reservedAt) {
      adjusted.push({ key, amounts: [...amounts] });
      adjust(stateOf(key, call.limits), call.limits, now(), amounts, reservedAt);
      // As crossTabStore does: credit given back may start another client's waiting task.
      if (amounts.some((amount) => amount < 0)) {
        for (const listener of listeners) listener({ key });
      }
    },
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
  if (batches) {
    Object.assign(store, {
      takeMany(key: string, costs: readonly StoreCost[], stop: boolean, call: StoreCall) {
        if (synchronous) return settleTake(key, costs, stop, call);
        return enqueue('takeMany', key, costs, stop, call);
      },
    });
  }

  return {
    store: defineStore(store),
    pending,
    grants,
    blocks,
    /** Every signal the pacer passed on, as it came. */
    observed,
    /** Every adjustment the pacer passed on (one amount per policy). */
    adjusted,
    get overlaps() {
      return overlaps;
    },
    get calls() {
      return calls;
    },
    get listeners() {
      return listeners.size;
    },
    /** Another client of the store blocks `key` for `ms`, and the store tells its listeners. */
    blockElsewhere(key: string, ms: number, limits: readonly ResolvedPolicy[]) {
      block(stateOf(key, limits), now() + ms);
      for (const listener of listeners) listener({ key, blockedMs: ms });
    },
    /** Another client resets `key`; listeners hear that its credit changed. */
    resetElsewhere(key: string) {
      states.delete(key);
      for (const listener of listeners) listener({ key });
    },
    /** Answers every pending call, oldest first, until none is left (answers may add calls). */
    answerAll() {
      while (pending.length > 0) (pending[0] as PendingCall).answer();
    },
  };
}
