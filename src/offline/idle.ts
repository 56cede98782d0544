import type { OutboxSnapshot } from './types.js';

/**
 * The state of an outbox that has not read its store yet: where every outbox starts, what the
 * server renders, and what hydration starts from (its entries live in the browser, so no server
 * knows them). A module of its own, so `fetch-pacer/react` can use it without the outbox's code.
 */
export const IDLE_OUTBOX_SNAPSHOT: OutboxSnapshot = Object.freeze({
  ready: false,
  pending: 0,
  inFlight: 0,
  flushing: false,
  online: true,
  nextAttemptAt: undefined,
  lastError: undefined,
  sent: 0,
  rejected: 0,
  dropped: 0,
  closed: false,
});
