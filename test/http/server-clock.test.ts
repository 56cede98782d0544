import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { seededRandom } from '../../bench/lib/random.mjs';
import { type ServerClock, serverClock } from '../../src/http/server-clock.js';

/**
 * A server whose clock is `offsetMs` ahead of ours answers requests sent at our `sentAt`, each
 * way taking 5-60 ms: the `Date` it stamps (its time floored to the second) and when the answer
 * comes, by our clock.
 */
function exchange(offsetMs: number, sentAt: number, random: () => number) {
  const stampedAt = sentAt + 5 + 55 * random();
  const answeredAt = stampedAt + 5 + 55 * random();
  const dateMs = Math.floor((stampedAt + offsetMs) / 1000) * 1000;
  return { dateMs, sentAt, answeredAt };
}

function heardFrom(offsetMs: number, answers: number, seed = 7): ServerClock {
  const clock = serverClock();
  const random = seededRandom(seed);
  for (let i = 0; i < answers; i++) {
    const { dateMs, sentAt, answeredAt } = exchange(offsetMs, 1_700_000_000_000 + i * 97, random);
    clock.heard(dateMs, sentAt, answeredAt);
  }
  return clock;
}

describe('ServerClock', () => {
  it('leaves our clock as it is until answers prove it off', () => {
    expect(serverClock().now(5_000)).toBe(5_000);
    // A right clock: every answer's bounds hold 0, however many.
    expect(heardFrom(0, 200).now(5_000)).toBe(5_000);
    // One answer bounds the offset only to about a second: 300 ms slow is within it.
    expect(heardFrom(300, 1).now(5_000)).toBe(5_000);
  });

  for (const offsetMs of [500, -500, 900, -1500, 5000, -3_600_000]) {
    it(`reads the server's clock ${offsetMs} ms from ours within a round trip, after a second of answers`, () => {
      // 11 answers, 97 ms apart: their stamps land on either side of the server's ticks.
      const read = heardFrom(offsetMs, 11).now(1_800_000_000_000) - 1_800_000_000_000;
      expect(Math.abs(read - offsetMs)).toBeLessThan(120);
      // Never later than the server's clock: a reset is read late, never early.
      expect(read).toBeLessThanOrEqual(offsetMs);
    });
  }

  it('starts again from an answer that disagrees with the bounds (our clock stepped)', () => {
    const clock = heardFrom(2000, 20);
    expect(clock.now(0)).toBeGreaterThan(1900);
    // Our clock stepped 2 s forward: the server is now as we are.
    const random = seededRandom(3);
    for (let i = 0; i < 20; i++) {
      const { dateMs, sentAt, answeredAt } = exchange(0, 1_700_000_100_000 + i * 97, random);
      clock.heard(dateMs, sentAt, answeredAt);
    }
    expect(clock.now(0)).toBe(0);
  });

  it('ignores an answer that says nothing (NaN, answered a second before it was sent), or one alone that disagrees', () => {
    const clock = heardFrom(-1500, 20);
    const before = clock.now(0);
    clock.heard(Number.NaN, 1_700_000_000_000, 1_700_000_000_050);
    clock.heard(1_700_000_000_000, 1_700_000_002_000, 1_700_000_000_500);
    clock.heard(1_700_000_000_000, Number.NaN, 1_700_000_000_050);
    expect(clock.now(0)).toBe(before);
    // A response from a cache, dated an hour ago: one alone changes nothing.
    clock.heard(1_700_000_000_000 - 3_600_000, 1_700_000_000_000, 1_700_000_000_050);
    expect(clock.now(0)).toBe(before);
    // Fresh answers agree with the bounds again; then two stale ones in a row do move them.
    clock.heard(1_699_999_998_000, 1_700_000_000_000, 1_700_000_000_050);
    expect(clock.now(0)).toBe(before);
    clock.heard(1_700_000_000_000 - 3_600_000, 1_700_000_000_000, 1_700_000_000_050);
    clock.heard(1_700_000_000_000 - 3_600_000, 1_700_000_000_100, 1_700_000_000_150);
    expect(clock.now(0)).toBeLessThan(-3_599_000);
  });

  it('never reads the server clock later than it is, whatever the offset, delays and answers', () => {
    // Safety: a reset read by it is never read early. Each answer: a send, the server's stamp
    // 0-300 ms later, the answer 0-300 ms after that, the next send 0-2 s on.
    const answer = fc.record({
      out: fc.double({ min: 0, max: 300, noNaN: true }),
      back: fc.double({ min: 0, max: 300, noNaN: true }),
      gap: fc.double({ min: 0, max: 2000, noNaN: true }),
    });
    fc.assert(
      fc.property(
        fc.integer({ min: -86_400_000, max: 86_400_000 }),
        fc.array(answer, { minLength: 1, maxLength: 40 }),
        (offsetMs, answers) => {
          const clock = serverClock();
          let sentAt = 1_700_000_000_000;
          for (const { out, back, gap } of answers) {
            const stampedAt = sentAt + out;
            const answeredAt = stampedAt + back;
            clock.heard(Math.floor((stampedAt + offsetMs) / 1000) * 1000, sentAt, answeredAt);
            // At the answer, the server's clock reads answeredAt + offsetMs.
            const read = clock.now(answeredAt);
            if (read > answeredAt + offsetMs + 1e-6 && read !== answeredAt) return false;
            sentAt = answeredAt + gap;
          }
          return true;
        },
      ),
    );
  });
});
