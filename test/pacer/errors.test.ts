import { runInNewContext } from 'node:vm';
import { describe, expect, expectTypeOf, it } from 'vitest';
import type { Decision } from '../../src/core/decision.js';
import {
  isPacerError,
  isRateLimitError,
  PacerDisposedError,
  PacerError,
  QueueFullError,
  RateLimitError,
} from '../../src/pacer/index.js';
import { isPacerDisposedError, isQueueFullError } from '../../src/pacer/errors.js';

const denial: Decision = {
  allowed: false,
  remaining: 0,
  retryAfterMs: 200,
  resetMs: 1_000,
  limit: 5,
  reason: 'rate',
};

describe('error classes', () => {
  it('each sets its name, extends PacerError and Error, and starts its message with [fetch-pacer]', () => {
    const errors = [
      new PacerError('[fetch-pacer] base'),
      new RateLimitError(denial, { key: 'api' }),
      new QueueFullError(10),
      new PacerDisposedError(),
    ];
    expect(errors.map((error) => error.name)).toEqual([
      'PacerError',
      'RateLimitError',
      'QueueFullError',
      'PacerDisposedError',
    ]);
    for (const error of errors) {
      expect(error).toBeInstanceOf(PacerError);
      expect(error).toBeInstanceOf(Error);
      expect(error.message).toMatch(/^\[fetch-pacer\] /);
      expect(String(error)).toMatch(new RegExp(`^${error.name}: `));
    }
  });

  it('RateLimitError carries the decision, the wait and the key, and says what to do', () => {
    const error = new RateLimitError(denial, { key: 'api' });
    expect(error).toMatchObject({ decision: denial, retryAfterMs: 200, key: 'api' });
    expect(error.maxWaitMs).toBeUndefined();
    expect(error.message).toMatch(/key 'api'/);
    expect(error.message).toMatch(/retry in 200 ms/);
  });

  it('RateLimitError from maxWaitMs names the option and the projected wait', () => {
    const error = new RateLimitError({ ...denial, retryAfterMs: 5_000 }, { maxWaitMs: 1_000 });
    expect(error.maxWaitMs).toBe(1_000);
    expect(error.message).toMatch(/about 5000 ms/);
    expect(error.message).toMatch(/`maxWaitMs` \(1000\)/);
  });

  it('QueueFullError carries maxQueue and says what to do', () => {
    const error = new QueueFullError(3, { key: 'api' });
    expect(error).toMatchObject({ maxQueue: 3, key: 'api' });
    expect(error.message).toMatch(/Raise `maxQueue`/);
  });

  it('passes `cause` through', () => {
    const cause = new Error('root');
    expect(new PacerError('[fetch-pacer] x', { cause }).cause).toBe(cause);
    expect(new RateLimitError(denial, { cause }).cause).toBe(cause);
    expect(new QueueFullError(1, { cause }).cause).toBe(cause);
    expect(new PacerDisposedError({ cause }).cause).toBe(cause);
    expect('cause' in new QueueFullError(1)).toBe(false);
  });

  it('accepts a message of its own', () => {
    expect(new RateLimitError(denial, { message: '[fetch-pacer] custom' }).message).toBe(
      '[fetch-pacer] custom',
    );
  });
});

describe('guards', () => {
  it('match their own class and its instances only', () => {
    const rate = new RateLimitError(denial);
    const full = new QueueFullError(1);
    const disposed = new PacerDisposedError();
    expect([rate, full, disposed].map(isPacerError)).toEqual([true, true, true]);
    expect([rate, full, disposed].map(isRateLimitError)).toEqual([true, false, false]);
    expect([rate, full, disposed].map(isQueueFullError)).toEqual([false, true, false]);
    expect([rate, full, disposed].map(isPacerDisposedError)).toEqual([false, false, true]);
    for (const other of [
      new Error('x'),
      new TypeError('x'),
      null,
      undefined,
      'RateLimitError',
      42,
    ]) {
      expect(isPacerError(other)).toBe(false);
      expect(isRateLimitError(other)).toBe(false);
      expect(isQueueFullError(other)).toBe(false);
    }
  });

  it('match by name an error from another realm, which fails instanceof', () => {
    const foreign: unknown = runInNewContext(`
      const error = new Error('[fetch-pacer] from an iframe');
      error.name = 'RateLimitError';
      error;
    `);
    expect(foreign).not.toBeInstanceOf(Error);
    expect(isRateLimitError(foreign)).toBe(true);
    expect(isPacerError(foreign)).toBe(true);
    expect(isQueueFullError(foreign)).toBe(false);
    expect(isQueueFullError({ name: 'QueueFullError', message: 'structured clone' })).toBe(true);
  });

  it('isPacerError matches a subclass from another layer, here and across realms, by brand', () => {
    class OutboxError extends PacerError {
      override readonly name = 'OutboxError' as const;
    }
    expect(isPacerError(new OutboxError('[fetch-pacer] outbox'))).toBe(true);
    const foreign: unknown = runInNewContext(`
      const brand = Symbol.for('fetch-pacer.PacerError');
      class PacerError extends Error {}
      Object.defineProperty(PacerError.prototype, brand, { value: true });
      class OutboxError extends PacerError {}
      const error = new OutboxError('[fetch-pacer] outbox');
      error.name = 'OutboxError';
      error;
    `);
    expect(isPacerError(foreign)).toBe(true);
    expect(isPacerError({ name: 'OutboxError' })).toBe(false);
  });
});

describe('the guards narrow as written', () => {
  it('leaves Error in the false branch of isPacerError on a value typed Error', () => {
    const error: Error = new Error('plain');
    if (isPacerError(error)) {
      expectTypeOf(error).toEqualTypeOf<PacerError>();
    } else {
      // Before PacerError carried its brand in its type, this branch was `never`.
      expectTypeOf(error).toEqualTypeOf<Error>();
      expect(error.message).toBe('plain');
    }
  });
});
