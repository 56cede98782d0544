import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CountedBucket } from '../../src/core/counted-bucket.js';
import { schemeCounter } from '../support/counting-servers.js';

/**
 * A bucket of 5 whose counts say 3 of a full one (redis-gcra's floats), grown once: a full count
 * of a request sent right after the one before.
 */
function redisGcraGrownOnce() {
  const bucket = new CountedBucket(5, 0, 0, 1 / 100);
  bucket.heardRoom(5, 3, 5, 0);
  bucket.heardRoom(110, 3, 5, 100);
  const grown = bucket.perMs;
  expect(grown / (Math.max(1 / 100, bucket.provenPerMs) * 1.1)).toBeCloseTo(1, 9);
  return { bucket, grown };
}

describe('a bucket paced by its counts', () => {
  it('takes a count as room, less the permits that may arrive after it', () => {
    // Found at 100 with 3 in flight, one permit per 10 s proven so far.
    const bucket = new CountedBucket(6, 100, 3, 1 / 10_000);
    expect(bucket.tryAcquire(100, 1)).toMatchObject({ allowed: false, reason: 'rate' });
    bucket.remember(150, 140, 4);
    // 5 left at the arrival of a request sent at 90: 3 in flight, 1 answered since 90.
    bucket.heardRoom(200, 5, 6, 90);
    expect(bucket.level(200)).toBe(1);
    expect(bucket.tryAcquire(200, 1).allowed).toBe(true);
    expect(bucket.tryAcquire(200, 1)).toMatchObject({ allowed: false, reason: 'rate' });
  });

  it('ignores a count of another limit, and an older count than one heard', () => {
    const bucket = new CountedBucket(6, 0, 0, 1 / 100);
    bucket.heardRoom(10, 5, 60, 0);
    expect(bucket.level(10)).toBeCloseTo(10 / 100, 9);
    bucket.heardRoom(20, 3, 6, 5);
    expect(bucket.level(20)).toBe(3);
    // Sent before the one heard: its room is stale, even if larger.
    bucket.heardRoom(25, 5, 6, 2);
    expect(bucket.level(25)).toBeCloseTo(3 + 5 / 100);
  });

  it('proves the refill from counts that fell less than was sent', () => {
    const bucket = new CountedBucket(10, 0, 0, 1 / 1_000);
    // Sent every 10 ms, answered 5 ms later, the count 9 each time: the bucket refilled one
    // permit per 10 ms at least, less what the span between sends and answers leaves unsure.
    for (let i = 0; i < 20; i++) bucket.heardRoom(i * 10 + 5, 9, 10, i * 10);
    // 18 surely between the first and the last, over 195 ms at most.
    expect(bucket.provenPerMs).toBeCloseTo(18 / 195, 9);
  });

  it('takes a higher count answered after a request was sent as one that arrived before it', () => {
    // Three sent 2 ms apart into a bucket of 5 (3 of a full one, in redis-gcra's floats), their
    // counts falling 2, 1, 0: each came after the one before. Counted as if it might arrive
    // after the last, each held a permit: the key waited three permits' time, not one.
    const perMs = 1 / 100;
    const bucket = new CountedBucket(5, 0, 3, perMs);
    bucket.heardRoom(0, 3, 5, -10);
    [
      [4, 0, 2],
      [5, 2, 1],
      [7, 4, 0],
    ].forEach(([answered = 0, sent = 0, count = 0]) => {
      bucket.settle(answered, 1);
      bucket.heardRoom(answered, count, 5, sent);
    });
    expect(bucket.peek(7, 1)).toMatchObject({ allowed: false, retryAfterMs: 100 });
  });

  it('proves the refill from the count heard last before a request was sent', () => {
    // Full for a second at every count (sent 200 ms apart), then drained to 0 by a burst, and
    // full again 50 ms later: 4 permits refilled in 50 ms at least (the send of the drained
    // one to the answer of the full one), where the oldest count proves one per 90 ms.
    const bucket = new CountedBucket(5, 0, 0, 1 / 1_000);
    for (let i = 0; i < 5; i++) bucket.heardRoom(i * 200 + 5, 4, 5, i * 200);
    for (let i = 0; i < 4; i++) bucket.heardRoom(1_006 + i, 3 - i, 5, 1_001 + i);
    bucket.heardRoom(1_056, 4, 5, 1_054);
    expect(bucket.provenPerMs).toBeCloseTo(4 / (1_056 - 1_004), 9);
  });

  it('grows past the proven rate while the bucket stays full, and cuts when it runs dry', () => {
    const bucket = new CountedBucket(6, 0, 0, 1 / 100);
    bucket.heardRoom(5, 5, 6, 0);
    const proven = bucket.provenPerMs;
    // The next request sent within one and a half permits' time, the bucket full again.
    bucket.heardRoom(110, 5, 6, 100);
    expect(bucket.perMs / (Math.max(proven, bucket.provenPerMs) * 1.1)).toBeCloseTo(1, 9);
    const grown = bucket.perMs;
    // A count of 1: cut by a tenth, the room is the count's.
    bucket.heardRoom(160, 1, 6, 150);
    expect(bucket.perMs / Math.max(bucket.provenPerMs, grown * 0.9)).toBeCloseTo(1, 9);
    expect(bucket.level(160)).toBe(1);
  });

  it('takes its highest count for full (redis-gcra says 3 of a full 5), and grows only while the requests in flight did not hold it back', () => {
    const { bucket, grown } = redisGcraGrownOnce();
    // Five in flight, the bucket it names: a sixth waits for an answer.
    for (let i = 0; i < 5; i++) expect(bucket.tryAcquire(200, 1).allowed).toBe(true);
    expect(bucket.tryAcquire(200 + 1 / grown, 1)).toMatchObject({ allowed: false });
    // Counted full, sent right after the one before, but as the fifth in flight: the requests
    // in flight held the key back, not its rate, which does not grow.
    bucket.settle(220, 1);
    bucket.heardRoom(220, 3, 5, 200);
    expect(bucket.perMs / Math.max(grown, bucket.provenPerMs)).toBeCloseTo(1, 9);
  });

  it('grows once per round trip: a full count of a request sent before the last growth shows no more', () => {
    const { bucket, grown } = redisGcraGrownOnce();
    // Full counts of two requests sent before the growth (heard at 110): they were sent at the
    // slower rate, which says nothing of the faster one.
    bucket.heardRoom(160, 3, 5, 105);
    bucket.heardRoom(170, 3, 5, 108);
    expect(bucket.perMs / Math.max(grown, bucket.provenPerMs)).toBeCloseTo(1, 9);
    // One sent after it, full: the grown rate kept the bucket full, and it grows again.
    const before = bucket.perMs;
    bucket.heardRoom(230, 3, 5, 112);
    expect(bucket.perMs / (Math.max(before, bucket.provenPerMs) * 1.1)).toBeCloseTo(1, 9);
  });

  it('halves the rate and spends the room at a refusal', () => {
    const bucket = new CountedBucket(6, 0, 0, 1 / 100);
    bucket.heardRoom(5, 5, 6, 0);
    const rate = bucket.perMs;
    bucket.refused(10);
    expect(bucket.perMs).toBeCloseTo(bucket.provenPerMs, 9);
    expect(bucket.level(10)).toBe(0);
    expect(bucket.perMs).toBeLessThan(rate);
  });

  it('rests when full, with nothing in flight, after ten quiet seconds', () => {
    const bucket = new CountedBucket(2, 0, 1, 1 / 100);
    expect(bucket.restsAt(0)).toBe(Number.POSITIVE_INFINITY);
    bucket.settle(50, 1);
    expect(bucket.isAtRest(1_000)).toBe(false);
    expect(bucket.restsAt(1_000)).toBe(10_050);
    expect(bucket.isAtRest(10_050)).toBe(true);
  });

  it("never proves a refill faster than a GCRA's, whatever the sends and the network", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 2, max: 20 }),
        fc.constantFrom(10, 20, 60, 100),
        fc.array(fc.tuple(fc.integer({ min: 0, max: 40 }), fc.nat(60), fc.nat(60)), {
          minLength: 5,
          maxLength: 200,
        }),
        (burst, rate, sends) => {
          const admits = schemeCounter({ scheme: 'gcra', limit: rate, windowMs: 1_000, burst });
          const bucket = new CountedBucket(burst, 0, 0, 1 / 10_000);
          // Each request: sent `gap` ms after the one before, `there` ms on the way, its answer
          // `back` ms more; the server sees them in arrival order, the client their answers.
          let sentAt = 0;
          const requests = sends.map(([gap, there, back]) => {
            sentAt += gap;
            return { sentAt, arrives: sentAt + there, answered: sentAt + there + back };
          });
          const verdicts = new Map<(typeof requests)[0], ReturnType<typeof admits>>();
          for (const request of [...requests].sort((a, b) => a.arrives - b.arrives)) {
            verdicts.set(request, admits(request.arrives));
          }
          for (const request of [...requests].sort((a, b) => a.answered - b.answered)) {
            const verdict = verdicts.get(request);
            if (verdict?.admitted !== true) continue;
            bucket.heardRoom(request.answered, verdict.remaining, burst, request.sentAt);
          }
          expect(bucket.provenPerMs).toBeLessThanOrEqual((rate / 1_000) * (1 + 1e-9));
        },
      ),
      { numRuns: 300 },
    );
  });
});
