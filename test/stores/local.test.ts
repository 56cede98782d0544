import { describe, expect, it } from 'vitest';
import { perSecond, resolvePolicy } from '../../src/core/policy.js';
import { LocalLimits } from '../../src/stores/local.js';
import { createManualClock } from '../../src/testing/index.js';

// What a shared store counts with when it cannot share (Redis out with fail-open, a browser
// without Web Locks): the core's limiter in this process alone.
const call = { limits: Object.freeze([resolvePolicy(perSecond(100))]) };

describe('counting alone (LocalLimits)', () => {
  it('learns the rate of bare refusals itself, which its pacers leave to the store', () => {
    const clock = createManualClock();
    const local = new LocalLimits(clock.now);
    local.takeMany('k', Array(100).fill(1), false, call);
    // Admitted, then refused without a wait, as a pacer on a store that paces refusals tells
    // it (its answers after a refusal; times relative to now).
    for (let i = 0; i < 4; i++) {
      clock.advance(300);
      local.takeMany('k', [1, 1], false, call);
      local.observe('k', { kind: 'answered', sentAt: -50 }, call);
      local.observe('k', { kind: 'refusal', sentAt: -10 }, call);
    }
    // Taken greedily for two seconds: a bare refusal read as "nothing left" alone would grant
    // the policy's 100 per second again at once; a rate learned from them grants far fewer.
    let granted = 0;
    for (let i = 0; i < 2_000; i++) {
      clock.advance(1);
      if (local.takeMany('k', [1], true, call)[0]?.allowed === true) granted++;
    }
    expect(granted).toBeLessThan(100);
  });

  it('learns the rate of refusals with a wait itself, which its pacers leave to the store', () => {
    const clock = createManualClock();
    const local = new LocalLimits(clock.now);
    // A window's worth admitted, then refused with `Retry-After: 1`, as a pacer on a store that
    // paces refusals tells it (times relative to now): the first refusal only blocks (the
    // answers before it were counted by nobody), the next one teaches.
    for (let round = 0; round < 2; round++) {
      local.takeMany('k', Array(21).fill(1), false, call);
      clock.advance(300);
      for (let i = 0; i < 20; i++) {
        local.observe('k', { kind: 'answered', sentAt: -300 + 10 * i }, call);
      }
      local.observe('k', { kind: 'refusal', retryAfterMs: 1_000, sentAt: -10 }, call);
      clock.advance(1_000);
    }
    // Taken greedily for a second: 20 a second, where the policy alone would grant its 100 at
    // once (its bucket refilled during the block) and 100 more.
    let granted = 0;
    for (let i = 0; i < 1_000; i++) {
      clock.advance(1);
      if (local.takeMany('k', [1], true, call)[0]?.allowed === true) granted++;
    }
    expect(granted).toBeGreaterThan(10);
    expect(granted).toBeLessThan(30);
  });
});
