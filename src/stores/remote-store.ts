import type { Decision } from '../core/decision.js';
import type { ResolvedPolicy } from '../core/policy.js';
import type { ServerSignal } from '../core/signal.js';
import type { Store, StoreCall, StoreCost } from '../pacer/store-contract.js';

/** A store kept outside this process or tab: every answer is a Promise, every method present. */
export interface RemoteStore extends Store {
  readonly synchronous: false;
  check(limits: readonly ResolvedPolicy[]): void;
  take(key: string, cost: StoreCost, call: StoreCall): Promise<Decision>;
  takeMany(
    key: string,
    costs: readonly StoreCost[],
    stopAtDenial: boolean,
    call: StoreCall,
  ): Promise<readonly Decision[]>;
  peek(key: string, cost: StoreCost, call: StoreCall): Promise<Decision>;
  block(key: string, ms: number, call: StoreCall): Promise<void>;
  observe(key: string, signal: ServerSignal, call: StoreCall): Promise<void>;
  adjust(
    key: string,
    amounts: readonly number[],
    call: StoreCall,
    reservedAt?: number,
  ): Promise<void>;
}
