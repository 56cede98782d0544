import type { ManualClock } from '../../src/testing/index.js';

import { settle as turn } from '../../src/testing/manual-clock.js';

/** One macrotask turn: every pending promise callback runs first. Not a sleep: no time passes. */
export { turn };

/**
 * Lets async work (msw's interception, response handling) run until `condition` holds, without
 * moving any clock. Fails loudly instead of hanging when it never does.
 */
export async function until(condition: () => boolean, turns = 200): Promise<void> {
  for (let i = 0; i < turns; i++) {
    if (condition()) return;
    await turn();
  }
  throw new Error(`condition still false after ${turns} turns: ${condition.toString()}`);
}

/**
 * Runs a paced client against a mocked server as if the network took no time: wait until no
 * request is in flight, then move the clock to the next timer, and again, up to `endMs`.
 * Every request is answered at the manual time it was sent.
 */
export async function drive(
  clock: ManualClock,
  pacer: { getSnapshot(): { inFlight: number } },
  endMs: number,
): Promise<void> {
  for (;;) {
    await until(() => pacer.getSnapshot().inFlight === 0);
    const next = clock.nextTimerAt;
    if (next === undefined || next > endMs) break;
    await clock.advanceAsync(Math.max(0, next - clock.now()));
  }
  await until(() => pacer.getSnapshot().inFlight === 0);
  if (clock.now() < endMs) clock.set(endMs);
}
