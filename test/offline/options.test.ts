import { describe, expect, it } from 'vitest';
import {
  createOutbox,
  indexedDBStorage,
  memoryStorage,
  type OutboxOptions,
} from '../../src/offline/index.js';

const base = {
  name: 'orders',
  fetch: async () => new Response(null),
  storage: memoryStorage(),
  network: { isOnline: () => false, subscribe: () => () => {} },
  locks: false,
} satisfies OutboxOptions;

function make(overrides: Record<string, unknown>) {
  return () => createOutbox({ ...base, ...overrides } as unknown as OutboxOptions);
}

describe('createOutbox options', () => {
  it('rejects options that are not an object', () => {
    expect(() => createOutbox(undefined as unknown as OutboxOptions)).toThrow(
      new TypeError('[fetch-pacer] Expected outbox options `{ name, fetch }`, got `undefined`'),
    );
  });

  it.each([
    ['name', '', TypeError, "Expected `name` to be a non-empty string, got `''` (string)"],
    ['name', 7, RangeError, 'Expected `name` to be a non-empty string, got `7` (number)'],
    ['fetch', undefined, TypeError, 'Expected `fetch` to be a function, got `undefined`'],
    ['storage', {}, TypeError, 'Expected `storage` to be an OutboxStorage'],
    ['key', 'origin', TypeError, "Expected `key` to be a function, got `'origin'` (string)"],
    [
      'maxRetentionMs',
      0,
      RangeError,
      'Expected `maxRetentionMs` to be a number of ms > 0 (or Infinity), got `0` (number)',
    ],
    ['maxRetentionMs', Number.NaN, RangeError, 'got `NaN` (number)'],
    [
      'maxEntries',
      1.5,
      RangeError,
      'Expected `maxEntries` to be a positive integer (or Infinity), got `1.5` (number)',
    ],
    ['maxEntries', 0, RangeError, 'got `0` (number)'],
    [
      'maxAttempts',
      -1,
      RangeError,
      'Expected `maxAttempts` to be a positive integer (or Infinity), got `-1` (number)',
    ],
    [
      'retryDelayMs',
      Number.POSITIVE_INFINITY,
      RangeError,
      'Expected `retryDelayMs` to be a number of ms > 0, got `Infinity` (number)',
    ],
    [
      'maxRetryDelayMs',
      2 ** 31,
      RangeError,
      'Expected `maxRetryDelayMs` to be at most 2147483647 (the longest timer), got `2147483648` (number)',
    ],
    [
      'idempotencyKeyHeader',
      'Bad Header',
      TypeError,
      "Expected `idempotencyKeyHeader` to be a header name or false, got `'Bad Header'` (string)",
    ],
    ['idempotencyKeyHeader', true, TypeError, 'got `true` (boolean)'],
    ['onSent', 1, RangeError, 'Expected `onSent` to be a function, got `1` (number)'],
    ['onRejected', null, TypeError, 'Expected `onRejected` to be a function, got `null`'],
    ['onDropped', 'x', TypeError, 'Expected `onDropped` to be a function'],
    ['onError', {}, TypeError, 'Expected `onError` to be a function, got a value of type object'],
    [
      'clock',
      { now: () => 0 },
      TypeError,
      'Expected `clock` to be an object with `now()`, `setTimeout()` and `clearTimeout()`',
    ],
    ['random', 0.5, RangeError, 'Expected `random` to be a function, got `0.5` (number)'],
    [
      'network',
      { isOnline: true },
      TypeError,
      'Expected `network` to be an object with `isOnline()` and `subscribe()`',
    ],
    [
      'locks',
      true,
      TypeError,
      'Expected `locks` to be a LockManager (`navigator.locks`) or false, got `true` (boolean)',
    ],
  ])('names %s when it is %o', (field, value, type, message) => {
    expect(make({ [field]: value })).toThrow(type);
    expect(make({ [field]: value })).toThrow(message);
    expect(make({ [field]: value })).toThrow(
      new RegExp(`^\\[fetch-pacer\\] Expected \`${field}\` to be `),
    );
  });

  it('accepts Infinity where a bound may be absent, and a paced fetch or any fetch function', () => {
    const outbox = createOutbox({
      ...base,
      maxRetentionMs: Number.POSITIVE_INFINITY,
      maxEntries: Number.POSITIVE_INFINITY,
      maxAttempts: Number.POSITIVE_INFINITY,
      idempotencyKeyHeader: false,
    });
    expect(outbox.name).toBe('orders');
    expect(Object.isFrozen(outbox)).toBe(true);
    return outbox.close();
  });

  it('validates the IndexedDB storage options too', () => {
    expect(() => indexedDBStorage(undefined as never)).toThrow(
      '[fetch-pacer] Expected IndexedDB storage options `{ name }`, got `undefined`',
    );
    expect(() => indexedDBStorage({ name: '' })).toThrow(
      "[fetch-pacer] Expected `name` to be a non-empty string, got `''` (string)",
    );
    expect(() => indexedDBStorage({ name: 'x', indexedDB: {} as IDBFactory })).toThrow(
      '[fetch-pacer] Expected `indexedDB` to be an IDBFactory, got a value of type object',
    );
  });
});
