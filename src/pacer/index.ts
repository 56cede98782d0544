export { defineStore } from './define-store.js';
export {
  isPacerError,
  isRateLimitError,
  PacerDisposedError,
  PacerError,
  QueueFullError,
  type QueueFullErrorOptions,
  RateLimitError,
  type RateLimitErrorOptions,
} from './errors.js';
export type { PacerClock, PacerMode, PacerOptions } from './options.js';
export { createPacer } from './pacer.js';
export type { Store, StoreCall, StoreCost, StoreEvent } from './store-contract.js';
export type {
  KeyInspection,
  Pacer,
  PacerSnapshot,
  ScheduleOptions,
  TaskProgress,
} from './types.js';
